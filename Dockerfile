# Builds the verdict binary and runs it on a slim Debian base, with the Pyodide its
# in-browser Python runner serves (from the npm registry at build time; nothing is
# fetched at run time).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin verdict

FROM node:20-bookworm-slim AS pyodide
WORKDIR /src
COPY vendor/package.json vendor/package-lock.json vendor/
COPY scripts/vendor-pyodide scripts/
RUN scripts/vendor-pyodide

FROM debian:bookworm-slim
RUN useradd --system --home /var/lib/verdict --create-home verdict
COPY --from=build /src/target/release/verdict /usr/local/bin/verdict
COPY --from=pyodide /src/vendor/node_modules/pyodide /usr/local/share/verdict/pyodide
USER verdict
WORKDIR /var/lib/verdict
EXPOSE 8080
ENV VERDICT_BIND=0.0.0.0:8080
ENV VERDICT_PYODIDE_DIR=/usr/local/share/verdict/pyodide
ENTRYPOINT ["verdict"]
CMD ["serve"]
