# The dkv image: one image for everything that runs in a cluster.
#   dkv controller   the install bundle's Deployment (deploy/dkv-install.k8s.yaml, `dkv install`)
#   dkv backup       each cluster's backup CronJob (`command: [dkv, backup]`)
#   dkv restore      a restoring member's init container (`command: [dkv, restore]`), which runs etcdutl
# so `dkv` and etcd's `etcdutl` are both on the PATH, and the entrypoint is dkv itself.
#
#   docker build -t registry.example.com/dkv/controller:0.1.0 .
#
# Base images are pinned by digest, so a rebuild gets the same bytes until the digest is
# bumped on purpose; the tag in front of each digest says what it was published as. The
# digests were not pulled here (no Docker engine where this file was written): each is the
# one several public Dockerfiles (and, for etcd, a Kubernetes cluster's reported imageID)
# agree on for that tag (Node.js 24, the LTS line package.json's engines asks for, in both
# Node stages; etcd v3.6.8, the etcd Kubernetes 1.36 pins).
# Override one with --build-arg, e.g. for a mirror.
ARG NODE_BUILD_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
ARG NODE_RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a
ARG ETCD_IMAGE=gcr.io/etcd-development/etcd:v3.6.8@sha256:397189418d1a00e500c0605ad18d1baf3b541a1004d768448c367e48071622e5

# etcd's own release image: etcdutl for `dkv restore` (etcdutl snapshot restore), statically linked.
FROM ${ETCD_IMAGE} AS etcd

# Production dependencies only. No install scripts: the package's own (`prepare`) compiles
# with the dev dependencies, and no production dependency needs one. (So the prepare script's
# scripts/install-node.js, which fetches Node.js 24 for a developer's npm scripts, does not
# run here either: the image's own Node.js 24 compiles.)
FROM ${NODE_BUILD_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# The compiled JavaScript: lib/ without declarations or source maps. The build context holds
# only what the compiler and the runtime read (.dockerignore), so lib/ holds no tests or benchmarks.
FROM ${NODE_BUILD_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npx tsc -p . --declaration false --sourceMap false
# `dkv` on the PATH. A script, not a symlink to bin/dkv.js: its `#!/usr/bin/env node` needs
# /usr/bin/env, which the distroless runtime does not have; this one names distroless' node.
RUN printf '%s\n' '#!/nodejs/bin/node' 'import("/app/bin/dkv.js");' > /usr/local/bin/dkv && chmod 0755 /usr/local/bin/dkv

# The runtime: distroless Node.js (no shell, no package manager), as the numeric non-root
# user the install bundle's pods run as (runAsUser: 65532, distroless' "nonroot").
FROM ${NODE_RUNTIME_IMAGE}
ENV NODE_ENV=production \
    PATH=/nodejs/bin:/usr/local/bin:/usr/bin:/bin
WORKDIR /app
COPY --from=etcd /usr/local/bin/etcdutl /usr/local/bin/etcdutl
COPY --from=build /usr/local/bin/dkv /usr/local/bin/dkv
COPY --from=deps /app/node_modules /app/node_modules
# What the compiled code reads at runtime: package.json marks the package root (api/package-root.ts),
# the schemas and the default configuration (api/validate.ts, api/config.ts), the example specs (dkv synth's default).
COPY --from=build /app/package.json /app/dkv.config.yaml /app/
COPY --from=build /app/api/config.schema.json /app/api/distributedkv.schema.json /app/api/
COPY --from=build /app/examples /app/examples
COPY --from=build /app/bin /app/bin
COPY --from=build /app/lib /app/lib
USER 65532:65532
ENTRYPOINT ["node", "/app/bin/dkv.js"]
CMD ["--help"]
