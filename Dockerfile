# PlayChat in a container: the bot and its admin API in one process, data in the /data volume.
# Build: podman build -t playchat .   (or docker build; see deploy/README.md "Container")
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# Debian's Python (3.11 on bookworm) keeps the image on one vendor's security updates.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin playchat \
    && mkdir -p /data && chown playchat:playchat /data

# Behind a TLS-intercepting proxy, pass its CA bundle to pip for the build only:
#   --volume /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro --build-arg PIP_CERT=/run/host-ca.crt
ARG PIP_CERT=""
COPY pyproject.toml README.md LICENSE /src/
COPY bot /src/bot
COPY admin_api /src/admin_api
RUN python3 -m venv /opt/playchat \
    && /opt/playchat/bin/pip install --no-cache-dir --quiet --disable-pip-version-check \
        ${PIP_CERT:+--cert "$PIP_CERT"} /src \
    && rm -rf /src

# The admin API listens on every interface inside the container (publish it on the host's
# loopback, see compose.yaml); binding beyond loopback makes ADMIN_PASSWORD mandatory.
ENV PATH=/opt/playchat/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    DB_PATH=/data/playchat.db \
    KB_DIR=/data/knowledge_base \
    ADMIN_HOST=0.0.0.0 \
    ADMIN_PORT=8765

USER playchat
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8765
# /health is public and exempt from the Host check: a liveness probe without credentials.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('ADMIN_PORT', '8765') + '/health', timeout=4)"]
CMD ["python3", "-m", "bot"]
