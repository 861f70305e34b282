package tokend

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "tokend.dev/client/go/tokendv1"
)

// fake answers CountTokens: UNAVAILABLE for the first `unavailable` calls, then a refusal
// with tokend's status details when the text is "refuse", else a count of 7.
type fake struct {
	pb.UnimplementedTokenizerServiceServer
	calls       int32
	unavailable int32
}

func (f *fake) CountTokens(ctx context.Context, req *pb.CountTokensRequest) (
	*pb.CountTokensResponse, error) {
	if atomic.AddInt32(&f.calls, 1) <= f.unavailable {
		return nil, status.Error(codes.Unavailable, "draining")
	}
	if len(req.GetTexts()) > 0 && req.GetTexts()[0] == "refuse" {
		grpc.SetTrailer(ctx, metadata.Pairs(RequestIDKey, "rid-7"))
		st, _ := status.New(codes.InvalidArgument, "texts[0]: no").WithDetails(
			&errdetails.ErrorInfo{Reason: "DisallowedSpecialToken", Domain: "tokend"},
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
				{Field: "texts[0]", Description: "no"}}})
		return nil, st.Err()
	}
	return &pb.CountTokensResponse{Total: 7}, nil
}

func serve(t *testing.T, f *fake) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	pb.RegisterTokenizerServiceServer(server, f)
	go server.Serve(listener) //nolint:errcheck
	t.Cleanup(server.Stop)
	return listener.Addr().String()
}

func call(t *testing.T, target string, text string, opts ...Option) (*pb.CountTokensResponse,
	error) {
	t.Helper()
	client, err := Dial(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Count(ctx, &pb.CountTokensRequest{Texts: []string{text}})
}

func TestUnavailableIsRetriedByTheServiceConfig(t *testing.T) {
	if !RetriesActive() {
		t.Fatal("grpc-go " + grpc.Version + " retries only with GRPC_GO_RETRY=on")
	}
	f := &fake{unavailable: 2}
	resp, err := call(t, serve(t, f), "hi")
	if err != nil || resp.GetTotal() != 7 || f.calls != 3 {
		t.Fatalf("want 7 after 3 attempts, got %v, %v after %d", resp, err, f.calls)
	}
}

func TestMaxAttemptsOneDoesNotRetry(t *testing.T) {
	f := &fake{unavailable: 1}
	_, err := call(t, serve(t, f), "hi", WithMaxAttempts(1))
	if terr, ok := AsError(err); !ok || terr.Code != codes.Unavailable || f.calls != 1 {
		t.Fatalf("want one UNAVAILABLE attempt, got %v after %d", err, f.calls)
	}
	if _, err := ServiceConfig(6); err == nil {
		t.Fatal("maxAttempts 6 (over gRPC's cap) was accepted")
	}
}

func TestErrorCarriesViolationsReasonAndRequestID(t *testing.T) {
	_, err := call(t, serve(t, &fake{}), "refuse")
	terr, ok := AsError(err)
	if !ok {
		t.Fatalf("want *Error, got %T %v", err, err)
	}
	want := FieldViolation{Field: "texts[0]", Description: "no"}
	if terr.Code != codes.InvalidArgument || len(terr.Violations) != 1 ||
		terr.Violations[0] != want || terr.Reason != "DisallowedSpecialToken" ||
		terr.Domain != "tokend" || terr.RequestID != "rid-7" {
		t.Fatalf("details lost: %+v", terr)
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("status.Code sees %v", status.Code(err))
	}
}
