// The Java interop program: the scripts/interop.py cases through the generated grpc-java stubs
// against a real server. Usage: Interop <target> <tls-target> <ca.pem>; prints
// "case<TAB>result" lines.
import com.google.protobuf.Any;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import dev.tokend.v1.ChatMessage;
import dev.tokend.v1.ChunkRequest;
import dev.tokend.v1.ChunkResponse;
import dev.tokend.v1.CountTokensRequest;
import dev.tokend.v1.CountTokensResponse;
import dev.tokend.v1.DecodeRequest;
import dev.tokend.v1.EncodeRequest;
import dev.tokend.v1.EncodeStreamRequest;
import dev.tokend.v1.EncodeStreamResponse;
import dev.tokend.v1.SpecialTokenPolicy;
import dev.tokend.v1.TextChunk;
import dev.tokend.v1.TokenizerServiceGrpc;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

public final class Interop {
  interface Case {
    String run() throws Exception;
  }

  static void report(String name, Case body) {
    String result;
    try {
      result = body.run();
    } catch (StatusRuntimeException e) {
      result = "ERROR " + e.getStatus().getCode() + ": " + e.getStatus().getDescription();
    } catch (Exception e) {
      result = "ERROR " + e;
    }
    System.out.println(name + "\t" + result.replace('\n', ' '));
  }

  static String join(List<?> values) {
    return values.stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  static String hex(byte[] data) {
    StringBuilder out = new StringBuilder();
    for (byte b : data) out.append(String.format("%02x", b));
    return out.toString();
  }

  /** The Python client's service config: UNAVAILABLE retried, never Train. Numbers are
   *  Doubles, as grpc-java reads JSON. */
  static Map<String, Object> serviceConfig() {
    Map<String, Object> retry = Map.of("maxAttempts", 5.0, "initialBackoff", "0.05s",
        "maxBackoff", "2s", "backoffMultiplier", 2.0,
        "retryableStatusCodes", List.of("UNAVAILABLE"));
    Map<String, Object> all = Map.of(
        "name", List.of(Map.of("service", "tokend.v1.TokenizerService")), "retryPolicy", retry);
    Map<String, Object> train = Map.of("name",
        List.of(Map.of("service", "tokend.v1.TokenizerService", "method", "Train")));
    return Map.of("methodConfig", List.of(all, train));
  }

  static ManagedChannel open(String target, ChannelCredentials creds) {
    return Grpc.newChannelBuilder(target, creds).overrideAuthority("localhost")
        .defaultServiceConfig(serviceConfig()).enableRetry().build();
  }

  public static void main(String[] args) throws Exception {
    ManagedChannel channel = open(args[0], InsecureChannelCredentials.create());
    TokenizerServiceGrpc.TokenizerServiceBlockingStub stub =
        TokenizerServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    TokenizerServiceGrpc.TokenizerServiceStub async = TokenizerServiceGrpc.newStub(channel);

    report("count", () -> {
      CountTokensResponse r = stub.countTokens(CountTokensRequest.newBuilder()
          .setTokenizer("gpt-4o").addTexts("hello world").addTexts("naïve café — 日本語 🙂")
          .addMessages(ChatMessage.newBuilder().setRole("system").setContent("Be brief."))
          .addMessages(ChatMessage.newBuilder().setRole("user").setContent("Weather in Oslo?")
              .setName("ann"))
          .build());
      return "counts=" + join(r.getCountsList()) + " messages=" + r.getMessagesCount()
          + " total=" + r.getTotal();
    });

    List<Integer> ids = new ArrayList<>();
    report("encode", () -> {
      ids.addAll(stub.encode(EncodeRequest.newBuilder().setTokenizer("o200k_base")
          .addTexts("hello <|endoftext|> world")
          .setSpecialTokens(SpecialTokenPolicy.newBuilder().addAllowed("<|endoftext|>"))
          .build()).getResults(0).getIdsList());
      return "ids=" + join(ids);
    });

    report("decode", () -> "text=" + hex(stub.decode(DecodeRequest.newBuilder()
        .setTokenizer("o200k_base").addAllIds(ids).build()).getText()
        .getBytes(StandardCharsets.UTF_8)));

    report("chunk", () -> {
      Iterator<ChunkResponse> responses = stub.chunk(ChunkRequest.newBuilder()
          .setTokenizer("o200k_base")
          .setText("The quick brown fox jumps over the lazy dog. ".repeat(6))
          .setMaxTokens(16).build());
      List<Long> counts = new ArrayList<>();
      List<Long> ends = new ArrayList<>();
      while (responses.hasNext()) {
        for (TextChunk chunk : responses.next().getChunksList()) {
          counts.add(chunk.getCount());
          ends.add(chunk.getEnd());
        }
      }
      return "counts=" + join(counts) + " ends=" + join(ends);
    });

    report("encode_stream", () -> {
      // Pieces split 日本 and the two code points of 👍🏽 (one grapheme).
      List<Integer> streamed = new ArrayList<>();
      CompletableFuture<Void> done = new CompletableFuture<>();
      StreamObserver<EncodeStreamRequest> requests = async
          .withDeadlineAfter(60, TimeUnit.SECONDS)
          .encodeStream(new StreamObserver<EncodeStreamResponse>() {
            @Override public void onNext(EncodeStreamResponse r) {
              streamed.addAll(r.getIdsList());
            }
            @Override public void onError(Throwable t) {
              done.completeExceptionally(t);
            }
            @Override public void onCompleted() {
              done.complete(null);
            }
          });
      List<String> pieces = Arrays.asList("Grüße aus 日", "本", " 👍", "🏽 and more");
      for (int i = 0; i < pieces.size(); i++) {
        EncodeStreamRequest.Builder request = EncodeStreamRequest.newBuilder()
            .setText(pieces.get(i));
        if (i == 0) request.setTokenizer("o200k_base");
        requests.onNext(request.build());
      }
      requests.onCompleted();
      done.get(60, TimeUnit.SECONDS);
      return "ids=" + join(streamed);
    });

    report("refused", () -> {
      try {
        stub.encode(EncodeRequest.newBuilder().setTokenizer("o200k_base")
            .addTexts("say <|endoftext|> now").build());
      } catch (StatusRuntimeException e) {
        com.google.rpc.Status rich = StatusProto.fromThrowable(e);
        String field = null;
        String reason = "";
        for (Any detail : rich.getDetailsList()) {
          if (detail.is(BadRequest.class)) {
            field = detail.unpack(BadRequest.class).getFieldViolations(0).getField();
          } else if (detail.is(ErrorInfo.class)) {
            reason = detail.unpack(ErrorInfo.class).getReason();
          }
        }
        if (field == null) return "ERROR no BadRequest violation";
        return "code=" + e.getStatus().getCode() + " field=" + field + " reason=" + reason;
      }
      return "ERROR the call was not refused";
    });

    report("deadline", () -> {
      // A bidirectional stream the client never closes: only the deadline can end it.
      CompletableFuture<Status> ended = new CompletableFuture<>();
      async.withDeadlineAfter(300, TimeUnit.MILLISECONDS)
          .encodeStream(new StreamObserver<EncodeStreamResponse>() {
            @Override public void onNext(EncodeStreamResponse r) {}
            @Override public void onError(Throwable t) {
              ended.complete(Status.fromThrowable(t));
            }
            @Override public void onCompleted() {
              ended.complete(Status.OK);
            }
          });
      return "code=" + ended.get(60, TimeUnit.SECONDS).getCode();
    });

    report("request_id", () -> {
      Metadata sent = new Metadata();
      Metadata.Key<String> key = Metadata.Key.of("x-request-id", Metadata.ASCII_STRING_MARSHALLER);
      sent.put(key, "interop-rid-42");
      AtomicReference<Metadata> headers = new AtomicReference<>();
      AtomicReference<Metadata> trailers = new AtomicReference<>();
      stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(sent),
              MetadataUtils.newCaptureMetadataInterceptor(headers, trailers))
          .countTokens(CountTokensRequest.newBuilder().setTokenizer("o200k_base")
              .addTexts("hi").build());
      return "id=" + trailers.get().get(key);
    });

    report("health", () -> "status=" + HealthGrpc.newBlockingStub(channel)
        .withDeadlineAfter(60, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService("tokend.v1.TokenizerService").build())
        .getStatus());

    report("tls", () -> {
      ManagedChannel secure = open(args[1],
          TlsChannelCredentials.newBuilder().trustManager(new File(args[2])).build());
      try {
        return "total=" + TokenizerServiceGrpc.newBlockingStub(secure)
            .withDeadlineAfter(60, TimeUnit.SECONDS)
            .countTokens(CountTokensRequest.newBuilder().setTokenizer("o200k_base")
                .addTexts("hello world").build()).getTotal();
      } finally {
        secure.shutdownNow();
      }
    });
    channel.shutdownNow();
  }
}
