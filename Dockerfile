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
ARG PYTHON=python:3.11-slim-bookworm
FROM ${PYTHON}
COPY pyproject.toml README.md /src/
COPY conformance /src/conformance
COPY reference_impl /src/reference_impl
RUN pip install --no-cache-dir /src && rm -rf /src
ENTRYPOINT ["kafka-conformance"]
CMD ["serve"]
