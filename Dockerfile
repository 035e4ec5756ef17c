# Tollgate's image: a build stage with the dev tools compiles dist/, the runtime stage gets the
# production dependencies only and runs as the unprivileged `node` user. Node 24 uses the built-in
# node:sqlite, so nothing is compiled and no build toolchain is needed in either stage.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.console.json ./
COPY scripts/ ./scripts/
COPY src/ ./src/
COPY plugins/ ./plugins/
COPY console/ ./console/
COPY schemas/ ./schemas/
RUN npm run build

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# Inside a container the gateway must accept connections from outside it; gateway.yaml reads this.
ENV TOLLGATE_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/scripts/prepare.mjs ./scripts/prepare.mjs
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/plugins ./dist/plugins
COPY --from=build /app/dist/console ./dist/console
COPY bin/ ./bin/
COPY schemas/ ./schemas/
# For each plugin's schema.json, which the gateway schema refers to (the .ts beside them are never loaded).
COPY plugins/ ./plugins/
COPY gateway.yaml ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund
# 0700: the store and the outbox are for the gateway's user alone (it makes its files 0600 itself).
RUN npm cache clean --force && mkdir -p /app/data && chown node:node /app/data && chmod 700 /app/data
USER node
# The embedded store (SQLite), its WAL files, the ledger outbox (data/outbox) and the pid file live here.
VOLUME ["/app/data"]
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Docker has no umask setting: the shell sets 0077 (anything the process makes is its user's alone,
# as the documented systemd unit's UMask=0077), then exec hands its pid to node, so the STOPSIGNAL
# reaches the gateway itself.
CMD ["/bin/sh", "-c", "umask 0077 && exec node bin/tollgate.js serve"]
