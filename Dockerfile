# modelport: one image for `modelport serve`, `modelport worker` and `modelport migrate`.
#
#   docker build -t modelport .                      # with the embedded text model (llama.cpp, ~6 min build)
#   docker build --build-arg EXTRAS= -t modelport .  # upstream text models only (no compiler needed)
#
# Build stage: wheels for modelport and its dependencies (llama-cpp-python compiles from source).
FROM python:3.11-slim-bookworm AS build
ARG EXTRAS=local
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".${EXTRAS:+[$EXTRAS]}"

# Runtime stage: no compiler, an unprivileged user, data under /var/lib/modelport.
FROM python:3.11-slim-bookworm
# libgomp: OpenMP runtime of llama.cpp and onnxruntime.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 modelport \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/modelport --create-home modelport
COPY --from=build /wheels /wheels
# Exactly the wheels the build stage made (modelport, its extras and their dependencies), nothing from an index.
RUN pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
WORKDIR /var/lib/modelport
ENV MODELPORT_DATA_DIR=/var/lib/modelport \
    MODELPORT_HOST=0.0.0.0 \
    MODELPORT_LOG_JSON=true \
    PYTHONUNBUFFERED=1
EXPOSE 8080 8081 9100
# Liveness without curl in the image: the process answers /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["modelport"]
CMD ["serve"]
