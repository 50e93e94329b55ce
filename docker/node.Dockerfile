# The trust-node image: the release binary, run as an unprivileged user (uid 10001),
# with node homes under /var/lib/trust and a healthcheck that asks the node's own API.
#
# BASE is the image the binary is put on. The default, a slim Debian, is for a machine
# that can pull from a registry:
#   docker build -f docker/node.Dockerfile --build-arg BASE=debian:bookworm-slim CONTEXT
# scripts/build-image.sh builds this file with no pull at all: its BASE is an image it
# makes here from the shared libraries the binary links (as `ldd` lists them), and
# CONTEXT is a folder it fills with the binary and the empty home folder.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

COPY trust-node /usr/local/bin/trust-node
# Owned by the node's user, so a named volume mounted here starts out writable by it.
COPY --chown=10001:10001 home/ /var/lib/trust/

USER 10001:10001
WORKDIR /var/lib/trust
ENV NO_COLOR=1
# p2p (gossip, sync, Bitswap), consensus, HTTP API: every container uses the same three.
EXPOSE 26600 26601 26602
# No shell in the offline image: the binary checks its own node (`GET /v1/status`).
HEALTHCHECK --interval=5s --timeout=4s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/trust-node", "status", "--api", "127.0.0.1:26602"]
ENTRYPOINT ["/usr/local/bin/trust-node"]
CMD ["--help"]
