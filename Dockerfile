# Multi-stage build of a static shardnet binary on a distroless base.
# `make image` passes the version build args from git; a plain
# `docker build .` leaves them dev/unknown, which `shardnet version` shows.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces two modules with copies in this directory (third_party/*/SHARDNET.md).
COPY third_party/ third_party/
RUN go mod download
COPY . .
# Declared after the download so that a new commit reuses its layer.
ARG VERSION=dev
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w \
      -X github.com/shardnet/shardnet/cmd/shardnet/app.Version=${VERSION} \
      -X github.com/shardnet/shardnet/cmd/shardnet/app.Commit=${COMMIT} \
      -X github.com/shardnet/shardnet/cmd/shardnet/app.BuildDate=${BUILD_DATE}" \
    -o /out/shardnet ./cmd/shardnet

FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="shardnet" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/shardnet /shardnet
USER 65532:65532
ENTRYPOINT ["/shardnet"]
