"""What every reference node process shares: config, data dir, listeners, handlers, metrics, stop.

A node runs until SIGINT/SIGTERM (``request_stop``) or a fatal condition (``fail``): then it
stops gracefully and, when fatal, the process exits 1 with one line on stderr saying why
(a port that cannot be bound, a data dir of another cluster or in use by another process …).

Handlers are the modules of ``reference_impl.handlers``: each ``api(node) -> Api | None`` is
called for the roles in the module's ``ROLES`` (default ``("broker",)``). A handler that raises
is answered like Kafka answers an unexpected exception (an error response shaped after the
request, UNKNOWN_SERVER_ERROR), never by a dropped connection.
"""

from __future__ import annotations

import asyncio
import fcntl
import importlib
import json
import logging
import os
import pkgutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from conformance.protocol import Codec, ErrorCode, KafkaError
from reference_impl import handlers as handlers_package
from reference_impl.config import ConfigError, NodeConfig
from reference_impl.error_responses import error_response
from reference_impl.metrics import NodeMetrics
from reference_impl.net.listener import CLOSE, Api, Features, Listener, RequestContext, Session
from reference_impl.process import LIFELINE_ENV, NodeFatal
from reference_impl.security.authorize import gated
from reference_impl.security_hooks import authorizer_for, security_for
from reference_impl.tasks import CLOSE_TIMEOUT_S, stop_tasks

log = logging.getLogger(__name__)

#: KIP-536: the process start time, taken when the node's code is first imported
PROCESS_START_MS = int(time.time() * 1000)


def guarded(codec: Codec, inner: Callable) -> Callable:
    """``inner`` answering whatever it raises: a :class:`KafkaError` (from any layer: handler,
    log, replica, controller) with its own code and message, anything else the way Kafka answers
    an unexpected exception (UNKNOWN_SERVER_ERROR); both shaped after the request."""

    async def handler(ctx: RequestContext, body: dict) -> dict | None:
        try:
            return await inner(ctx, body)
        except asyncio.CancelledError:
            raise
        except KafkaError as e:
            code, message = int(e.code), e.message
        except Exception:
            log.exception("api %d v%d failed", ctx.api_key, ctx.version)
            code, message = int(ErrorCode.UNKNOWN_SERVER_ERROR), "internal error"
        answer = error_response(codec, ctx.api_key, ctx.version, body, code, message)
        return CLOSE if answer is None else answer

    return handler


#: how long a node whose launcher is gone may take to stop before it exits regardless
LIFELINE_GRACE_S = 30.0


class Node:
    role = ""
    #: the listener type of the spec's ``listeners`` this node's listeners serve
    listener_type = ""

    def __init__(self, config: NodeConfig, metrics: NodeMetrics) -> None:
        self.config = config
        self.node_id = config.node_id
        self.start_time_ms = PROCESS_START_MS
        self.codec = Codec.from_specs()
        self.data_dir = Path(config.data_dir)
        self.metrics = metrics
        self.metrics.start_time.set(self.start_time_ms)
        self.authorizer = authorizer_for(config)
        self.listeners: list[Listener] = []
        self.cluster_id: str | None = None
        self.fatal: str | None = None
        self._stop: asyncio.Event | None = None
        self._lock_fd: int | None = None
        self._tasks: set[asyncio.Task] = set()
        #: the process that started this node is gone (its lifeline broke)
        self.orphaned = False

    # --- helpers for subclasses and handlers ---------------------------------------------

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool:
        return self.authorizer.authorize(session, operation, resource)

    def spawn(self, coro: Any, name: str) -> asyncio.Task:
        """A background task whose unexpected failure is fatal to the node (never silent)."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if isinstance(exc, NodeFatal):
            self.fail(str(exc))
        else:
            log.error("task %s failed", task.get_name(), exc_info=exc)
            self.fail(f"internal error in {task.get_name()}: {exc!r}")

    def fail(self, reason: str) -> None:
        if self.fatal is None:
            self.fatal = reason
            log.error("fatal: %s", reason)
        self.request_stop()

    def request_stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop is not None and self._stop.is_set()

    def lock_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise NodeFatal(f"data dir {self.data_dir} is in use by another process") from None
        self._lock_fd = fd

    def handler_apis(self) -> list[Api]:
        apis = []
        for info in pkgutil.iter_modules(handlers_package.__path__):
            module = importlib.import_module(f"{handlers_package.__name__}.{info.name}")
            make = getattr(module, "api", None)
            if make is None or self.role not in getattr(module, "ROLES", ("broker",)):
                continue
            api = gated(self, make(self))
            if api is not None:
                apis.append(
                    Api(api.key, self._guarded(api), api.min_version, api.max_version, api.also_on)
                )
        return apis

    def _guarded(self, api: Api) -> Callable:
        inner = guarded(self.codec, self.wrap_handler(api))
        name = self.codec.message(api.key, "request").name.removesuffix("Request")
        counter = self.metrics.requests
        by_version: dict[int, Any] = {}  # the counter's child per version (labels() each time: 5x)

        async def counted(ctx: RequestContext, body: dict) -> dict | None:
            child = by_version.get(ctx.version)
            if child is None:
                child = by_version[ctx.version] = counter.labels(name, str(ctx.version))
            child.inc()
            return await inner(ctx, body)

        return counted

    def wrap_handler(self, api: Api) -> Callable:
        """Subclasses may gate handlers (a broker serves clients only once unfenced)."""
        return api.handler

    def build_listeners(self) -> None:
        apis = self.handler_apis()
        limits = release_limits(self.config)
        for lc in self.config.listeners:
            client = lc.name != self.config.inter_broker_listener
            self.listeners.append(
                Listener(
                    lc.name,
                    self.listener_type,
                    self.codec,
                    apis,
                    host=lc.host,
                    port=lc.port,
                    security=security_for(self.config, lc),
                    idle_timeout=self.config.connections_max_idle_ms / 1000,
                    features=features_for(self.config),
                    limits=limits if client else None,
                    identity=self._identity if self.listener_type != "controller" else None,
                )
            )

    async def start_listeners(self) -> None:
        for listener in self.listeners:
            try:
                await listener.start()
            except OSError as e:
                raise NodeFatal(
                    f"cannot bind listener {listener.name} to {listener.host}:{listener.port}: "
                    f"{e.strerror or e}"
                ) from None
            log.info("listener %s on %s:%d", listener.name, listener.host, listener.port)

    def start_metrics(self) -> None:
        try:
            port = self.metrics.start(self.config.metrics_port)
        except OSError as e:
            raise NodeFatal(
                f"cannot bind the metrics port {self.config.metrics_port}: {e.strerror or e}"
            ) from None
        log.info("metrics on 127.0.0.1:%d", port)

    def _identity(self) -> tuple[str | None, int]:
        """The cluster id and node id a client may expect of this broker (ApiVersions v5)."""
        return self.cluster_id, self.config.node_id

    def set_cluster_id(self, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.metrics.set_cluster_id(cluster_id)
        log.info("cluster id %s", cluster_id)

    def write_runtime_info(self, **extra: Any) -> None:
        """``node.json`` in the data dir: where this process listens (for tests and tools)."""
        info = {
            "pid": os.getpid(),
            "role": self.role,
            "node_id": self.node_id,
            "listeners": {lst.name: lst.port for lst in self.listeners},
            "metrics_port": self.metrics.port,
            "start_time_ms": self.start_time_ms,
            "cluster_id": self.cluster_id,
            **extra,
        }
        tmp = self.data_dir / "node.json.tmp"
        tmp.write_text(json.dumps(info) + "\n", encoding="utf-8")
        os.replace(tmp, self.data_dir / "node.json")

    # --- the process ---------------------------------------------------------------------

    async def start(self) -> None:
        raise NotImplementedError

    async def shutdown(self) -> None:
        """Graceful part of stopping (the broker's Stopping state); then ``close``."""

    async def close(self) -> None:
        """Stop the listeners and every task the node spawned, each within a bound: a task that
        ignores its cancellation is named in the log and left behind, never waited for."""
        for listener in self.listeners:
            await listener.stop()
        await stop_tasks(self._tasks, CLOSE_TIMEOUT_S)
        self.metrics.stop()

    def _watch_lifeline(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stop when the process that started us is gone, however it died (kill -9 included).

        The launcher gives a node a pipe as stdin (and names it in KC_NODE_LIFELINE_FD) whose
        writing end only the launcher holds; end of file on it means the launcher is gone: the
        node stops as on SIGTERM, and exits at the latest LIFELINE_GRACE_S later, so that its
        data dir is free again either way. The graceful part of stopping (a broker's controlled
        shutdown) is skipped: the cluster is going down as a whole, nobody would take over."""
        fd_text = os.environ.get(LIFELINE_ENV)
        if fd_text is None:
            return
        fd = int(fd_text)
        os.set_blocking(fd, False)

        def readable() -> None:
            try:
                data = os.read(fd, 4096)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data:
                return
            loop.remove_reader(fd)
            log.warning("the process that started this node is gone: stopping")
            self.orphaned = True
            self.request_stop()
            watchdog = threading.Timer(LIFELINE_GRACE_S, os._exit, (1,))
            watchdog.daemon = True
            watchdog.start()

        loop.add_reader(fd, readable)

    async def run(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        self._watch_lifeline(loop)
        starting = loop.create_task(self.start(), name="start")
        stopped = loop.create_task(self._stop.wait(), name="stop")
        try:
            await asyncio.wait({starting, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if starting.done():
                starting.result()  # a start-up failure (NodeFatal) ends here
                await stopped
                if self.fatal is None and not self.orphaned:
                    await self.shutdown()
            else:  # stopped while starting (still waiting for the controller, say)
                starting.cancel()
                await asyncio.gather(starting, return_exceptions=True)
        except NodeFatal as e:
            self.fatal = self.fatal or str(e)
        finally:
            stopped.cancel()
            await self.close()
        if self.fatal is not None:
            raise NodeFatal(self.fatal)


class RotatingLog(RotatingFileHandler):
    """The node's log file, rotated by size. The launcher also points the process's stdout and
    stderr at it (a crash's traceback, the one-line fatal reason): after each rotation they are
    pointed at the new file too, so nothing keeps growing the rotated one."""

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")

    def doRollover(self) -> None:
        super().doRollover()
        if self.stream is not None:
            sys.stderr.flush()
            sys.stdout.flush()
            for fd in (1, 2):
                os.dup2(self.stream.fileno(), fd)


def main(factory: Callable[[NodeConfig], Node], argv: list[str] | None = None) -> int:
    """``python -m reference_impl.<role> CONFIG``: run one node; exit 1 with a reason on failure."""
    args = sys.argv[1:] if argv is None else argv
    prog = "reference_impl node"
    if len(args) != 1:
        print(f"usage: {prog} CONFIG.json", file=sys.stderr)
        return 2
    try:
        config = NodeConfig.load(args[0])
    except ConfigError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    name = f"{config.role} {config.node_id}"
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    if config.log_file:
        handler = RotatingLog(config.log_file, config.log_file_max_bytes, config.log_file_backups)
    logging.basicConfig(
        level=getattr(logging, config.log_level.upper(), logging.INFO),
        format=f"%(asctime)s %(levelname)s [{name}] %(name)s: %(message)s",
        handlers=[handler],
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    try:
        node = factory(config)
        asyncio.run(node.run())
    except NodeFatal as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


#: the features this reference supports: transaction.version 2 is KIP-890 part 2
SUPPORTED_FEATURES = {"transaction.version": (0, 2)}
#: finalized unless ``settings["features"]`` says otherwise (Kafka 4.x's default for a new cluster)
DEFAULT_FEATURE_LEVELS = {"transaction.version": 2}


def features_for(config: NodeConfig) -> Features:
    """ApiVersions' features: the levels of ``settings["features"]`` (name -> level; 0 leaves a
    feature unfinalized), fixed for the cluster's life (UpdateFeatures changes none)."""
    levels = {**DEFAULT_FEATURE_LEVELS, **config.settings.get("features", {})}
    finalized = {n: int(v) for n, v in levels.items() if int(v) > 0}
    return Features(dict(SUPPORTED_FEATURES), finalized, epoch=1 if finalized else -1)


def release_limits(config: NodeConfig) -> dict[int, tuple[int, int]] | None:
    """``settings["api_ranges"]`` (api key -> [lowest, highest]): the ranges of the Apache Kafka
    release this node stands for on its client listeners (``--target 'reference?release=V'``,
    ``serve --release V``: the release table's, written into the config by the caller). The
    inter-broker listener keeps everything the cluster itself speaks."""
    ranges = config.settings.get("api_ranges")
    if ranges is None:
        return None
    return {int(k): (int(v[0]), int(v[1])) for k, v in ranges.items()}
