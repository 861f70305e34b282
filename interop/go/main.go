// The Go interop program: the scripts/interop.py cases through tokend.dev/client/go against
// a real server. Usage: interop <target> <tls-target> <ca.pem>; prints "case<TAB>result".
package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tokend.dev/client/go/tokend"
	pb "tokend.dev/client/go/tokendv1"
)

func joinIDs(ids []uint32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ",")
}

func joinU64(values []uint64) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

func report(name string, result string, err error) {
	if err != nil {
		result = "ERROR " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	fmt.Printf("%s\t%s\n", name, result)
}

func main() {
	target, tlsTarget, caFile := os.Args[1], os.Args[2], os.Args[3]
	client, err := tokend.Dial(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	count, err := client.Count(ctx, &pb.CountTokensRequest{
		Tokenizer: "gpt-4o",
		Texts:     []string{"hello world", "naïve café — 日本語 🙂"},
		Messages: []*pb.ChatMessage{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "Weather in Oslo?", Name: "ann"},
		},
	})
	report("count", fmt.Sprintf("counts=%s messages=%d total=%d",
		joinU64(count.GetCounts()), count.GetMessagesCount(), count.GetTotal()), err)

	encoded, err := client.Encode(ctx, &pb.EncodeRequest{
		Tokenizer:     "o200k_base",
		Texts:         []string{"hello <|endoftext|> world"},
		SpecialTokens: &pb.SpecialTokenPolicy{Allowed: []string{"<|endoftext|>"}},
	})
	var ids []uint32
	if err == nil {
		ids = encoded.GetResults()[0].GetIds()
	}
	report("encode", "ids="+joinIDs(ids), err)

	decoded, err := client.Decode(ctx, &pb.DecodeRequest{Tokenizer: "o200k_base", Ids: ids})
	report("decode", "text="+hex.EncodeToString([]byte(decoded.GetText())), err)

	chunks, err := client.Chunk(ctx, &pb.ChunkRequest{Tokenizer: "o200k_base",
		Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6), MaxTokens: 16})
	var counts, ends []uint64
	for _, chunk := range chunks {
		counts, ends = append(counts, chunk.GetCount()), append(ends, chunk.GetEnd())
	}
	report("chunk", fmt.Sprintf("counts=%s ends=%s", joinU64(counts), joinU64(ends)), err)

	// Pieces split 日本 and the two code points of 👍🏽 (one grapheme, one byte-level token run).
	streamed, err := client.EncodeStream(ctx, "o200k_base", nil,
		[]string{"Grüße aus 日", "本", " 👍", "🏽 and more"})
	report("encode_stream", "ids="+joinIDs(streamed), err)

	_, err = client.Encode(ctx, &pb.EncodeRequest{Tokenizer: "o200k_base",
		Texts: []string{"say <|endoftext|> now"}})
	if terr, ok := tokend.AsError(err); ok && len(terr.Violations) > 0 {
		report("refused", fmt.Sprintf("code=%s field=%s reason=%s", codeName(terr.Code),
			terr.Violations[0].Field, terr.Reason), nil)
	} else {
		report("refused", "", fmt.Errorf("no BadRequest violation: %v", err))
	}

	// A bidirectional stream the client never closes: only the deadline can end it.
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	stream, err := client.Stub().EncodeStream(short)
	if err == nil {
		for err == nil {
			_, err = stream.Recv()
		}
	}
	stop()
	report("deadline", "code="+codeName(status.Code(err)), nil)

	var trailer metadata.MD
	_, err = client.Count(tokend.WithRequestID(ctx, "interop-rid-42"),
		&pb.CountTokensRequest{Tokenizer: "o200k_base", Texts: []string{"hi"}},
		grpc.Trailer(&trailer))
	report("request_id", "id="+tokend.RequestIDOf(trailer), err)

	health, err := healthpb.NewHealthClient(client.Conn()).Check(ctx,
		&healthpb.HealthCheckRequest{Service: tokend.ServiceName})
	report("health", "status="+health.GetStatus().String(), err)

	creds, err := credentials.NewClientTLSFromFile(caFile, "localhost")
	if err != nil {
		report("tls", "", err)
		return
	}
	secure, err := tokend.Dial(tlsTarget, tokend.WithTLS(creds))
	if err != nil {
		report("tls", "", err)
		return
	}
	defer secure.Close()
	overTLS, err := secure.Count(ctx, &pb.CountTokensRequest{Tokenizer: "o200k_base",
		Texts: []string{"hello world"}})
	report("tls", fmt.Sprintf("total=%d", overTLS.GetTotal()), err)
}

// codeName is the canonical status name ("INVALID_ARGUMENT") the other languages print
// (grpc-go's Code.String() says "InvalidArgument").
func codeName(code codes.Code) string {
	names := map[codes.Code]string{codes.InvalidArgument: "INVALID_ARGUMENT",
		codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.Unavailable: "UNAVAILABLE"}
	if name, ok := names[code]; ok {
		return name
	}
	return code.String()
}
