# Multi-stage build of a static shardnet binary on a distroless base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/shardnet ./cmd/shardnet

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/shardnet /shardnet
USER 65532:65532
ENTRYPOINT ["/shardnet"]
