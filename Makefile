# dplr build, test and benchmark entry points. See README.md.
SHELL := /bin/bash
GO ?= go
BACKEND ?= gonum
BIN := bin
PLUGINS := pca rgrad fedrep orbit example

ifeq ($(BACKEND),openblas)
  TAGS := -tags openblas
  PLUGIN_DIR := $(BIN)/plugins-openblas
else
  TAGS :=
  PLUGIN_DIR := $(BIN)/plugins
endif

.PHONY: all build proto test test-gonum test-openblas fuzz demo bench bench-full vet fmt clean deps-check

all: build

proto:
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" protoc -I engine/proto \
	  --plugin=protoc-gen-go="$$($(GO) tool -n protoc-gen-go)" \
	  --plugin=protoc-gen-go-grpc="$$($(GO) tool -n protoc-gen-go-grpc)" \
	  --go_out=engine/proto/dplrpb --go_opt=paths=source_relative \
	  --go-grpc_out=engine/proto/dplrpb --go-grpc_opt=paths=source_relative \
	  engine/proto/dplr.proto
