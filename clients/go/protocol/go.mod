module cassalock/clients/protocol

go 1.24
