// Package tokend is a thin Go client of the tokend gRPC service (tokend.v1.TokenizerService).
//
// It wraps the generated stubs (package tokendv1) with the Python client's channel policy:
// UNAVAILABLE retried by gRPC's own retry policy in the service config (never Train),
// generous message limits, optional TLS and bearer token; failed calls come back as *Error
// with the google.rpc details tokend sends. It uses only APIs present in grpc-go 1.33
// (Debian 12) that current grpc-go still has, so it builds against both.
package tokend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	pb "tokend.dev/client/go/tokendv1"
)

// ServiceName is the gRPC service tokend serves.
const ServiceName = "tokend.v1.TokenizerService"

// DefaultMaxAttempts is the Python client's: gRPC caps maxAttempts at 5.
const DefaultMaxAttempts = 5

// DefaultMaxMessageBytes bounds each message both ways (64 MiB, as the Python client).
const DefaultMaxMessageBytes = 64 * 1024 * 1024

// ServiceConfig is the channel's service config: every method retried on UNAVAILABLE with
// exponential backoff, except Train (it uploads a corpus and starts a job, so the caller
// decides; the most specific name entry wins). maxAttempts must be in [1, 5].
func ServiceConfig(maxAttempts int) (string, error) {
	if maxAttempts < 1 || maxAttempts > 5 {
		return "", fmt.Errorf("tokend: maxAttempts must be in [1, 5] (gRPC's cap), got %d",
			maxAttempts)
	}
	all := map[string]interface{}{"name": []map[string]string{{"service": ServiceName}}}
	if maxAttempts > 1 {
		all["retryPolicy"] = map[string]interface{}{
			"maxAttempts":          maxAttempts,
			"initialBackoff":       "0.05s",
			"maxBackoff":           "2s",
			"backoffMultiplier":    2,
			"retryableStatusCodes": []string{"UNAVAILABLE"},
		}
	}
	train := map[string]interface{}{
		"name": []map[string]string{{"service": ServiceName, "method": "Train"}}}
	data, err := json.Marshal(map[string]interface{}{
		"methodConfig": []interface{}{all, train}})
	return string(data), err
}

// RetriesActive says whether this process's grpc-go applies retry policies: always from
// grpc-go 1.40 on; before (Debian 12 ships 1.33) only with GRPC_GO_RETRY=on in the
// environment, read once when the program starts.
func RetriesActive() bool {
	var major, minor int
	if _, err := fmt.Sscanf(grpc.Version, "%d.%d", &major, &minor); err == nil &&
		(major > 1 || minor >= 40) {
		return true
	}
	return strings.EqualFold(os.Getenv("GRPC_GO_RETRY"), "on")
}

type config struct {
	creds       credentials.TransportCredentials
	token       string
	maxAttempts int
	maxMessage  int
	extra       []grpc.DialOption
}

// Option configures Dial.
type Option func(*config)

// WithTLS uses TLS with these credentials (credentials.NewClientTLSFromFile(ca, serverName),
// or credentials.NewTLS(cfg) for mutual TLS); without it the channel is plaintext.
func WithTLS(creds credentials.TransportCredentials) Option {
	return func(c *config) { c.creds = creds }
}

// WithToken sends "authorization: Bearer <token>" on every call (tokend's --admin-token).
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithMaxAttempts sets the retry policy's maxAttempts (1 disables retries).
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithMaxMessageBytes bounds each message sent and received.
func WithMaxMessageBytes(n int) Option { return func(c *config) { c.maxMessage = n } }

// WithDialOptions appends raw grpc.DialOptions (interceptors, keepalive, a balancer config).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.extra = append(c.extra, opts...) }
}

// Client calls one tokend server (or a balanced set behind one target). Safe for concurrent
// use; Close it when done.
type Client struct {
	conn  *grpc.ClientConn
	stub  pb.TokenizerServiceClient
	token string
}

// Dial opens a channel to target ("127.0.0.1:50051", "dns:///tokend:50051"). Connecting is
// lazy: an unreachable server shows up as UNAVAILABLE on the first call (after the retries).
func Dial(target string, opts ...Option) (*Client, error) {
	cfg := config{maxAttempts: DefaultMaxAttempts, maxMessage: DefaultMaxMessageBytes}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.token != "" && strings.ContainsAny(cfg.token, " \t\r\n") {
		return nil, errors.New("tokend: the token must not contain whitespace")
	}
	serviceConfig, err := ServiceConfig(cfg.maxAttempts)
	if err != nil {
		return nil, err
	}
	dial := []grpc.DialOption{
		grpc.WithDefaultServiceConfig(serviceConfig),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.maxMessage),
			grpc.MaxCallSendMsgSize(cfg.maxMessage)),
	}
	if cfg.creds != nil {
		dial = append(dial, grpc.WithTransportCredentials(cfg.creds))
	} else {
		// subtle: grpc.WithInsecure is deprecated in current grpc-go but still there, and
		// its replacement (credentials/insecure) does not exist in grpc-go 1.33 (Debian 12).
		dial = append(dial, grpc.WithInsecure()) //nolint:staticcheck
	}
	dial = append(dial, cfg.extra...)
	conn, err := grpc.Dial(target, dial...) //nolint:staticcheck // grpc.NewClient is 1.63+
	if err != nil {
		return nil, fmt.Errorf("tokend: dial %s: %w", target, err)
	}
	return &Client{conn: conn, stub: pb.NewTokenizerServiceClient(conn), token: cfg.token}, nil
}

// Close closes the channel.
func (c *Client) Close() error { return c.conn.Close() }

// Conn is the underlying channel (for the health client, reflection, other services).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Stub is the generated client, for the RPCs this wrapper does not cover (Train, Lint...).
func (c *Client) Stub() pb.TokenizerServiceClient { return c.stub }

// WithRequestID returns ctx carrying id as the call's x-request-id (echoed in the trailer).
func WithRequestID(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, RequestIDKey, id)
}

func (c *Client) outgoing(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

// unary runs one unary call, turning its error into *Error with the trailer's request id.
func unary[Req, Resp any](ctx context.Context, c *Client, req Req, opts []grpc.CallOption,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	var trailer metadata.MD
	opts = append(opts, grpc.Trailer(&trailer))
	resp, err := call(c.outgoing(ctx), req, opts...)
	return resp, newError(err, trailer)
}

// Count counts texts and/or a chat (CountTokens).
func (c *Client) Count(ctx context.Context, req *pb.CountTokensRequest,
	opts ...grpc.CallOption) (*pb.CountTokensResponse, error) {
	return unary(ctx, c, req, opts, c.stub.CountTokens)
}

// Encode encodes a batch of texts to ids.
func (c *Client) Encode(ctx context.Context, req *pb.EncodeRequest,
	opts ...grpc.CallOption) (*pb.EncodeResponse, error) {
	return unary(ctx, c, req, opts, c.stub.Encode)
}

// Decode decodes ids (or a batch of id lists) to text and exact bytes.
func (c *Client) Decode(ctx context.Context, req *pb.DecodeRequest,
	opts ...grpc.CallOption) (*pb.DecodeResponse, error) {
	return unary(ctx, c, req, opts, c.stub.Decode)
}

// Truncate cuts a text to at most req.MaxTokens tokens.
func (c *Client) Truncate(ctx context.Context, req *pb.TruncateRequest,
	opts ...grpc.CallOption) (*pb.TruncateResponse, error) {
	return unary(ctx, c, req, opts, c.stub.Truncate)
}

// ListTokenizers lists every tokenizer the server serves.
func (c *Client) ListTokenizers(ctx context.Context,
	opts ...grpc.CallOption) (*pb.ListTokenizersResponse, error) {
	return unary(ctx, c, &pb.ListTokenizersRequest{}, opts, c.stub.ListTokenizers)
}

// Chunk splits req.Text into pieces of at most req.MaxTokens tokens (a server stream,
// collected here in order).
func (c *Client) Chunk(ctx context.Context, req *pb.ChunkRequest,
	opts ...grpc.CallOption) ([]*pb.TextChunk, error) {
	stream, err := c.stub.Chunk(c.outgoing(ctx), req, opts...)
	if err != nil {
		return nil, newError(err, nil)
	}
	var chunks []*pb.TextChunk
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return chunks, nil
		}
		if err != nil {
			return nil, newError(err, stream.Trailer())
		}
		chunks = append(chunks, msg.GetChunks()...)
	}
}

// EncodeStream encodes one text sent as pieces (any boundary between code points: proto3
// strings are valid UTF-8, so a piece cannot end inside a character's bytes) over the
// bidirectional stream, sending while it receives; the ids equal one Encode of the joined
// text. policy may be nil (Encode's default: special-token text is an error).
func (c *Client) EncodeStream(ctx context.Context, tokenizer string,
	policy *pb.SpecialTokenPolicy, pieces []string, opts ...grpc.CallOption) ([]uint32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.stub.EncodeStream(c.outgoing(ctx), opts...)
	if err != nil {
		return nil, newError(err, nil)
	}
	sent := make(chan error, 1)
	go func() {
		first := &pb.EncodeStreamRequest{Tokenizer: tokenizer, SpecialTokens: policy}
		if len(pieces) == 0 {
			pieces = []string{""}
		}
		for i, piece := range pieces {
			req := &pb.EncodeStreamRequest{Text: piece}
			if i == 0 {
				first.Text = piece
				req = first
			}
			if err := stream.Send(req); err != nil {
				sent <- err // the server ended the call: Recv reports why
				return
			}
		}
		sent <- stream.CloseSend()
	}()
	var ids []uint32
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return ids, nil
		}
		if err != nil {
			return nil, newError(err, stream.Trailer())
		}
		ids = append(ids, msg.GetIds()...)
		if msg.GetDone() {
			<-sent
			return ids, nil
		}
	}
}
