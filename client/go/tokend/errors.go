package tokend

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// RequestIDKey is the metadata key of the request id: sent by the client (or made by the
// server) and echoed back in the trailing metadata; the server logs failed calls under it.
const RequestIDKey = "x-request-id"

// FieldViolation is one google.rpc.BadRequest field violation: which request field
// ("texts[0]", "tokenizer", "config.corpus_path") and why.
type FieldViolation struct {
	Field       string
	Description string
}

// Error is a failed call with the status details tokend sends in grpc-status-details-bin:
// the BadRequest field violations, the ErrorInfo reason (the server's error class, e.g.
// "DisallowedSpecialToken", "UnknownTokenizer") and the call's request id.
//
//	var terr *tokend.Error
//	if errors.As(err, &terr) && terr.Code == codes.InvalidArgument { ... terr.Violations ... }
type Error struct {
	Code       codes.Code
	Message    string
	Reason     string
	Domain     string
	Violations []FieldViolation
	RequestID  string
	status     *status.Status
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.String()
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// GRPCStatus lets status.Code(err) and status.FromError(err) see the original status.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// AsError returns err as an *Error when it is one (or wraps one).
func AsError(err error) (*Error, bool) {
	var terr *Error
	ok := errors.As(err, &terr)
	return terr, ok
}

// newError turns a gRPC error into an *Error; trailer is the call's trailing metadata (for
// the request id). A nil error stays nil; an error that is no gRPC status is returned as is.
func newError(err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	out := &Error{Code: st.Code(), Message: st.Message(), RequestID: RequestIDOf(trailer),
		status: st}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				out.Violations = append(out.Violations,
					FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		case *errdetails.ErrorInfo:
			out.Reason, out.Domain = d.GetReason(), d.GetDomain()
		}
	}
	return out
}

// RequestIDOf is the request id in a call's header or trailing metadata ("" when none).
func RequestIDOf(md metadata.MD) string {
	if values := md.Get(RequestIDKey); len(values) > 0 {
		return values[0]
	}
	return ""
}
