"""kombu's transports as MemoryHub uses them: Redis with one publish client per channel, and
the filesystem transport (``make run``'s default broker) without its race.

Redis: publishing through one client per channel instead of one per message.

kombu's Redis channel builds a new ``redis.Redis`` for every message it publishes
(``conn_or_acquire`` with no client). Building one fills a table of about 170 response
callbacks: 90 of the 410 microseconds of CPU a publish took here.
A ``redis.Redis`` is thread-safe and only borrows connections from the channel's pool, so one
per channel and pool does the same work. :mod:`memoryhub.celery` maps ``redis://`` and
``rediss://`` broker URLs to this transport.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

import redis
from kombu.transport import filesystem as kombu_filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)


class Channel(kombu_redis.Channel):
    _sync_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the worker's BRPOP client: kombu already keeps one per channel
            # kombu-stubs lack Channel._create_client (kombu's redis.py defines it).
            return super()._create_client(asynchronous=True)  # type: ignore[misc]
        if self.connection.client is None:
            # Celery 5.7's consumer, on a lost broker connection, collects the connection
            # (which detaches the transport from it) and then closes it; closing restores the
            # unacknowledged messages, which needs a client and found no connection details:
            # AttributeError, which nothing catches, and the worker stopped ("Unrecoverable
            # error"). As a connection error it is ignored, as Redis being away already was;
            # the messages stay in Redis's unacked table and come back after the visibility
            # timeout.
            raise redis.exceptions.ConnectionError("the broker connection is closed")
        # The pool is replaced after a fork or a disconnect; the client must follow it.
        pool = self.pool
        if self._sync_client is None or self._sync_client.connection_pool is not pool:
            self._sync_client = super()._create_client()  # type: ignore[misc]
        return self._sync_client


class Transport(kombu_redis.Transport):
    Channel = Channel


# --- The filesystem transport --------------------------------------------------------------
#
# kombu's filesystem channel creates a message's file, then writes it; a consumer that lists
# the folder in between takes an empty file, fails to decode it, and the worker stops with
# "Unrecoverable error" (the message is lost). Polling every 50 ms (settings) made that
# frequent under load. Here a message is written under a name no consumer takes, then renamed
# into place (atomic on POSIX), and a consumer claims a file by renaming it into the processed
# folder (one rename wins), reads it and deletes it. A file that still does not decode is
# logged and dropped rather than stopping the worker; the embeddings and webhook sweeps find
# what its task was for.
#
# The exchange's table of queues has the same race: kombu creates the file, then locks and
# writes it, so a publisher reading it in between parses an empty file and raises. A table
# that does not exist yet is written aside and linked into place (the link fails if another
# process made it first, which then goes through kombu's locked update). And kombu marks a
# binding in its process-wide state before it writes the table: another thread of the process
# that saw the mark skipped its own binding and published into no table (the message was
# dropped without a word). A process binds one queue at a time, so the mark never runs ahead.

_binding = threading.Lock()


class FilesystemChannel(kombu_filesystem.Channel):
    # kombu-stubs name the argument "message" in the virtual channel, "payload" here.
    def _put(self, queue: str, message: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        folder = Path(self.data_folder_out)
        partial = folder / f"{name}.partial"  # "<ms>_<uuid>.<queue>.msg.partial": no queue's
        partial.write_bytes(str_to_bytes(dumps(message)))
        os.replace(partial, folder / name)

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        wanted = f"{queue}.msg"
        folder, claimed = Path(self.data_folder_in), Path(self.processed_folder)
        for name in sorted(os.listdir(folder)):
            if name.partition(".")[2] != wanted:
                continue
            try:
                os.replace(folder / name, claimed / name)
            except FileNotFoundError:
                continue  # another consumer claimed it
            raw = (claimed / name).read_bytes()
            (claimed / name).unlink()
            try:
                return loads(raw)
            except ValueError:
                logger.error("dropped an unreadable broker message %s (%d bytes)", name, len(raw))
        raise Empty()

    def queue_bind(self, queue: str, exchange: str | None = None, routing_key: str = "",
                   arguments: Any = None, **kwargs: Any) -> None:
        with _binding:
            super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str | None,
                    queue: str) -> None:
        # kombu-stubs lack _exchange_file, which refuses names that leave the control folder.
        file: Path = self._exchange_file(exchange)  # type: ignore[attr-defined]
        self.control_folder.mkdir(exist_ok=True)
        table = [kombu_filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")]
        partial = file.with_name(f"{file.name}.{uuid.uuid4()}.partial")
        partial.write_bytes(str_to_bytes(dumps(table)))
        try:
            os.link(partial, file)  # never replaces: an existing table keeps its queues
            return
        except FileExistsError:
            pass
        finally:
            partial.unlink()
        super()._queue_bind(exchange, routing_key, pattern, queue)


class FilesystemTransport(kombu_filesystem.Transport):
    Channel = FilesystemChannel
