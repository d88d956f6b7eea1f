# The bundled reference cluster as a container image: the project installed in an official
# Python image, `kafka-conformance` as the entrypoint. Its nodes listen on the loopback only, so
# run it on the host's network:
#
#   docker build -t kafka-conformance:0.1.0 .
#   docker run --rm --network host kafka-conformance:0.1.0 serve --port-base 29000
#       -> controller 127.0.0.1:29000, brokers 127.0.0.1:29101-29103
#
# or let the suite start it: kafka-conformance run --target docker:kafka-conformance:0.1.0
# (profile `reference`). The base image is an argument: --build-arg PYTHON=python:3.12-slim.
# Without a registry, `python -m conformance.targets.images reference` builds it on a Python base
# made here from Debian (README, "Images built offline").
ARG PYTHON=python:3.11-slim-bookworm
FROM ${PYTHON}
# the dependencies first, from pyproject.toml alone: a change of the sources reuses this layer
COPY pyproject.toml /src/
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" > /src/requirements.txt \
    && pip install --no-cache-dir -r /src/requirements.txt
COPY README.md /src/
COPY setup.py /src/
COPY conformance /src/conformance
COPY specs /src/specs
COPY reference_impl /src/reference_impl
RUN pip install --no-cache-dir --no-deps /src && rm -rf /src
ENTRYPOINT ["kafka-conformance"]
CMD ["serve"]
