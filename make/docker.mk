# Container images and the project's own Docker daemon (docs/containers.md).
# Included from the top Makefile. The scripts live in docker/; all large artefacts
# (wheelhouse, build context, dockerd data root, logs) go to .build/.
#
#   make docker-up             start our dockerd (no systemd needed); prints the DOCKER_HOST to export
#   make docker-down           stop it
#   make docker-status         is it running (pid, DOCKER_HOST)
#   make base-image            duplexeval/base:bookworm-py311 from Debian packages (debootstrap)
#   make wheelhouse            .build/wheelhouse from the pinned requirements of every image's packages
#   make images                every image: each component's duplexeval/<name>:<version> and each
#                              runner package's duplexeval/runner-<name>:<version>
#   make image NAME=<name>     one image: a component (judge, ...) or runner-<name> (runner-moshi, ...)
#   make docker-prune          drop dangling images and build cache beyond DOCKER_CACHE_KEEP
#
# BASE_IMAGE: the image everything is built FROM. The Dockerfiles default to
# python:3.11-slim-bookworm (for machines with a registry); here it defaults to the local
# equivalent made by `make base-image`, because our machines reach no registry. Override
# with `make images BASE_IMAGE=python:3.11-slim-bookworm` where one is reachable; when it
# cannot be had, the build falls back to the local base.
#
# The engine: $DOCKER_HOST when set; else our dockerd when running; else the default socket.

DOCKER_SCRIPTS_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../docker)
BASE_IMAGE ?= duplexeval/base:bookworm-py311
export BASE_IMAGE
# BuildKit cache kept by docker-prune (most recently used first); the images need about 4 GB
DOCKER_CACHE_KEEP ?= 6GB

.PHONY: docker-up docker-down docker-status docker-prune base-image wheelhouse images image

docker-up:
	@$(DOCKER_SCRIPTS_DIR)/dockerd.sh start
	@echo "# to use it from your shell: eval \"\$$($(DOCKER_SCRIPTS_DIR)/dockerd.sh env)\""

docker-down:
	@$(DOCKER_SCRIPTS_DIR)/dockerd.sh stop

docker-status:
	@$(DOCKER_SCRIPTS_DIR)/dockerd.sh status

docker-prune:
	@$(DOCKER_SCRIPTS_DIR)/prune.sh $(DOCKER_CACHE_KEEP)

base-image:
	@$(DOCKER_SCRIPTS_DIR)/base-image.sh $(if $(filter 1,$(FORCE)),--force,)

wheelhouse:
	@$(DOCKER_SCRIPTS_DIR)/wheelhouse.sh

images: wheelhouse
	@$(DOCKER_SCRIPTS_DIR)/build-image.sh --all

image:
	@test -n "$(NAME)" || { echo "usage: make image NAME=<component> | NAME=runner-<runner package>" >&2; exit 2; }
	@$(DOCKER_SCRIPTS_DIR)/wheelhouse.sh common $(NAME)
	@$(DOCKER_SCRIPTS_DIR)/build-image.sh $(NAME)
