// The C++ interop program: the scripts/interop.py cases through the generated grpc++ stubs
// against a real server. Usage: interop <target> <tls-target> <ca.pem>; prints
// "case<TAB>result" lines.
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tokend/v1/tokenizer.grpc.pb.h"

namespace {

using tokend::v1::TokenizerService;

const char* kCodeNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};

template <typename T>
std::string Join(const T& values) {
  std::ostringstream out;
  for (int i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  return out.str();
}

std::string Hex(const std::string& data) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : data) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

void Report(const std::string& name, const grpc::Status& status, const std::string& result) {
  std::cout << name << '\t';
  if (status.ok()) {
    std::cout << result;
  } else {
    std::cout << "ERROR " << kCodeNames[status.error_code()] << ": " << status.error_message();
  }
  std::cout << std::endl;
}

// The channel the Python client opens: UNAVAILABLE retried by the service config.
std::shared_ptr<grpc::Channel> Open(const std::string& target,
                                    std::shared_ptr<grpc::ChannelCredentials> creds) {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(
      R"({"methodConfig": [{"name": [{"service": "tokend.v1.TokenizerService"}],
          "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "2s",
          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}},
          {"name": [{"service": "tokend.v1.TokenizerService", "method": "Train"}]}]})");
  args.SetSslTargetNameOverride("localhost");
  return grpc::CreateCustomChannel(target, creds, args);
}

std::unique_ptr<grpc::ClientContext> Context(int seconds = 60) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return context;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: interop <target> <tls-target> <ca.pem>" << std::endl;
    return 2;
  }
  auto channel = Open(argv[1], grpc::InsecureChannelCredentials());
  auto stub = TokenizerService::NewStub(channel);

  {
    tokend::v1::CountTokensRequest request;
    request.set_tokenizer("gpt-4o");
    request.add_texts("hello world");
    request.add_texts("naïve café — 日本語 🙂");
    auto* system = request.add_messages();
    system->set_role("system");
    system->set_content("Be brief.");
    auto* user = request.add_messages();
    user->set_role("user");
    user->set_content("Weather in Oslo?");
    user->set_name("ann");
    tokend::v1::CountTokensResponse response;
    auto status = stub->CountTokens(Context().get(), request, &response);
    Report("count", status, "counts=" + Join(response.counts()) + " messages=" +
           std::to_string(response.messages_count()) + " total=" +
           std::to_string(response.total()));
  }

  google::protobuf::RepeatedField<uint32_t> ids;
  {
    tokend::v1::EncodeRequest request;
    request.set_tokenizer("o200k_base");
    request.add_texts("hello <|endoftext|> world");
    request.mutable_special_tokens()->add_allowed("<|endoftext|>");
    tokend::v1::EncodeResponse response;
    auto status = stub->Encode(Context().get(), request, &response);
    if (status.ok()) ids = response.results(0).ids();
    Report("encode", status, "ids=" + Join(ids));
  }

  {
    tokend::v1::DecodeRequest request;
    request.set_tokenizer("o200k_base");
    *request.mutable_ids() = ids;
    tokend::v1::DecodeResponse response;
    auto status = stub->Decode(Context().get(), request, &response);
    Report("decode", status, "text=" + Hex(response.text()));
  }

  {
    tokend::v1::ChunkRequest request;
    request.set_tokenizer("o200k_base");
    std::string text;
    for (int i = 0; i < 6; ++i) text += "The quick brown fox jumps over the lazy dog. ";
    request.set_text(text);
    request.set_max_tokens(16);
    auto context = Context();
    auto reader = stub->Chunk(context.get(), request);
    std::vector<uint64_t> counts, ends;
    tokend::v1::ChunkResponse response;
    while (reader->Read(&response)) {
      for (const auto& chunk : response.chunks()) {
        counts.push_back(chunk.count());
        ends.push_back(chunk.end());
      }
    }
    auto status = reader->Finish();
    Report("chunk", status, "counts=" + Join(counts) + " ends=" + Join(ends));
  }

  {
    // Pieces split 日本 and the two code points of 👍🏽 (one grapheme).
    auto context = Context();
    auto stream = stub->EncodeStream(context.get());
    std::vector<std::string> pieces = {"Grüße aus 日", "本", " 👍", "🏽 and more"};
    for (size_t i = 0; i < pieces.size(); ++i) {
      tokend::v1::EncodeStreamRequest request;
      if (i == 0) request.set_tokenizer("o200k_base");
      request.set_text(pieces[i]);
      if (!stream->Write(request)) break;
    }
    stream->WritesDone();
    std::vector<uint32_t> streamed;
    tokend::v1::EncodeStreamResponse response;
    while (stream->Read(&response)) {
      for (auto id : response.ids()) streamed.push_back(id);
    }
    auto status = stream->Finish();
    Report("encode_stream", status, "ids=" + Join(streamed));
  }

  {
    tokend::v1::EncodeRequest request;
    request.set_tokenizer("o200k_base");
    request.add_texts("say <|endoftext|> now");
    tokend::v1::EncodeResponse response;
    auto status = stub->Encode(Context().get(), request, &response);
    // The rich status: a google.rpc.Status in grpc-status-details-bin, its details Any's.
    google::rpc::Status rich;
    std::string field, reason;
    if (!status.ok() && rich.ParseFromString(status.error_details())) {
      for (const auto& detail : rich.details()) {
        google::rpc::BadRequest bad;
        google::rpc::ErrorInfo info;
        if (detail.UnpackTo(&bad) && bad.field_violations_size() > 0) {
          field = bad.field_violations(0).field();
        } else if (detail.UnpackTo(&info)) {
          reason = info.reason();
        }
      }
    }
    Report("refused", grpc::Status::OK, field.empty() ? "ERROR no BadRequest violation"
           : std::string("code=") + kCodeNames[status.error_code()] + " field=" + field +
             " reason=" + reason);
  }

  {
    // A bidirectional stream the client never closes: only the deadline can end it.
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
    auto stream = stub->EncodeStream(&context);
    tokend::v1::EncodeStreamResponse response;
    while (stream->Read(&response)) {
    }
    auto status = stream->Finish();
    Report("deadline", grpc::Status::OK, std::string("code=") + kCodeNames[status.error_code()]);
  }

  {
    auto context = Context();
    context->AddMetadata("x-request-id", "interop-rid-42");
    tokend::v1::CountTokensRequest request;
    request.set_tokenizer("o200k_base");
    request.add_texts("hi");
    tokend::v1::CountTokensResponse response;
    auto status = stub->CountTokens(context.get(), request, &response);
    const auto& trailer = context->GetServerTrailingMetadata();
    auto found = trailer.find("x-request-id");
    std::string id = found == trailer.end() ? "" : std::string(found->second.data(),
                                                                found->second.size());
    Report("request_id", status, "id=" + id);
  }

  {
    auto health = grpc::health::v1::Health::NewStub(channel);
    grpc::health::v1::HealthCheckRequest request;
    request.set_service("tokend.v1.TokenizerService");
    grpc::health::v1::HealthCheckResponse response;
    auto status = health->Check(Context().get(), request, &response);
    Report("health", status, "status=" + grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                                            response.status()));
  }

  {
    std::ifstream file(argv[3]);
    std::stringstream pem;
    pem << file.rdbuf();
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = pem.str();
    auto secure = TokenizerService::NewStub(Open(argv[2], grpc::SslCredentials(options)));
    tokend::v1::CountTokensRequest request;
    request.set_tokenizer("o200k_base");
    request.add_texts("hello world");
    tokend::v1::CountTokensResponse response;
    auto status = secure->CountTokens(Context().get(), request, &response);
    Report("tls", status, "total=" + std::to_string(response.total()));
  }
  return 0;
}
