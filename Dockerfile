# Builds the verdict binary and runs it on a slim Debian base.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin verdict

FROM debian:bookworm-slim
RUN useradd --system --home /var/lib/verdict --create-home verdict
COPY --from=build /src/target/release/verdict /usr/local/bin/verdict
USER verdict
WORKDIR /var/lib/verdict
EXPOSE 8080
ENV VERDICT_BIND=0.0.0.0:8080
ENTRYPOINT ["verdict"]
CMD ["serve"]
