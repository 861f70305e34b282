module tokend.dev/client/go

// The oldest versions it is built against are Debian 12's packages (grpc-go 1.33, protobuf-go
// 1.28, genproto 2020): docs/clients.md builds it offline from them in GOPATH mode.
go 1.19

require (
	google.golang.org/genproto v0.0.0-20200526211855-cb27e3aa2013
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
