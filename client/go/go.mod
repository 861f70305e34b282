module tokend.dev/client/go

// Module mode (with a proxy): a current grpc-go release line. The errdetails package comes
// from the split module google.golang.org/genproto/googleapis/rpc; requiring the old
// monolithic google.golang.org/genproto beside a current grpc-go fails with "ambiguous import".
// This file is not verified offline here (no module proxy); docs/clients.md says so.
//
// GOPATH mode ignores this file: the offline build from Debian 12's packages (grpc-go 1.33,
// protobuf-go 1.28, genproto 2020; tests/client/test_go_client.py) uses the same import paths.
go 1.22

require (
	google.golang.org/genproto/googleapis/rpc v0.0.0-20241104194629-dd2ea8efbc28
	google.golang.org/grpc v1.69.4
	google.golang.org/protobuf v1.36.2
)
