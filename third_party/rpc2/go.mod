module github.com/cenkalti/rpc2

go 1.20

require github.com/cenkalti/hub v1.0.2
