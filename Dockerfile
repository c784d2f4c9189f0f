# syntax=docker/dockerfile:1
# agentd container image: `docker build -t agentd .` (or `docker compose up --build`).
#
# Two stages: the builder makes a virtualenv in /opt/venv holding agentd and its dependencies,
# pinned by constraints.txt; the runtime stage copies only that venv and the files agentd needs
# at run time (app/, migrations/, alembic.ini, agents/) and runs as an unprivileged user.
# Both stages use the same base image, so the venv's interpreter links stay valid.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    PATH=/opt/venv/bin:$PATH

RUN python -m venv /opt/venv

WORKDIR /src

# Dependencies first (their own layer, rebuilt only when pyproject.toml or constraints.txt change).
COPY pyproject.toml constraints.txt README.md ./
RUN --mount=type=cache,target=/root/.cache/pip \
    python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > requirements.txt \
    && pip install -c constraints.txt -r requirements.txt

# Then agentd itself (non-editable: the `agentd` console script and the `app` package).
COPY app ./app
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install --no-deps -c constraints.txt .


FROM ${PYTHON_IMAGE} AS runtime

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    AGENTD_DATA_DIR=/app/data \
    AGENTD_AGENTS_DIR=/app/agents \
    PORT=8000

RUN groupadd --system --gid 10001 agentd \
    && useradd --system --uid 10001 --gid agentd --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin agentd

WORKDIR /app

COPY --from=builder /opt/venv /opt/venv
COPY alembic.ini ./
COPY migrations ./migrations
COPY app ./app
COPY agents ./agents
COPY --chmod=0755 docker/entrypoint.sh ./docker/entrypoint.sh

# Code stays root-owned (read-only for the service); only the data dir (SQLite file, local blobs,
# the S3 store's upload spool) is the service's. Mount a volume there to keep local state: an empty
# named volume starts as a copy of these folders, and agentd creates any missing one at startup.
RUN python -m compileall -q app migrations agents \
    && mkdir -p /app/data/blobs/tmp /app/data/blobs/sha256 /app/data/spool \
    && chown -R agentd:agentd /app/data

USER 10001:10001

EXPOSE 8000

# No curl in the slim image: the venv's python probes /health (urlopen raises on non-2xx).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8000'), timeout=4)" || exit 1

# Migrates (`alembic upgrade head`), then execs `agentd serve --host 0.0.0.0 --port $PORT`.
ENTRYPOINT ["/app/docker/entrypoint.sh"]
