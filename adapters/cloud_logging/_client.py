"""Cloud Logging: what the workers said about a model around a failure, bounded.

The public surface of the log backends::

    LogSource (Protocol)      async entries(query, cursor) -> LogPage; aclose()
    ├── CloudLoggingSource    google-cloud-logging over REST, off the event loop
    └── InMemoryLogSource     the twin (cloud_logging_memory), same filter and paging

Records: :class:`LogQuery` in, :class:`LogPage` of :class:`LogEntry` out. Every answer
is bounded (entries, bytes, message length, backend pages, time) and says when and why
it stopped early; its cursor wraps the API's own page token.

The official synchronous client is used, in a worker thread. Two things it does not
offer are done here, on its own transport: ``Client.list_entries`` (3.17) returns a
bare generator of entries, which hides the pager and so the ``nextPageToken``; and it
takes no timeout. So each page is fetched by the same ``HTTPIterator`` the client
builds, over the client's authenticated connection, with a timeout bound in.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread
from openrl_inspect.adapters.logs import (
    CloudLoggingSettings,
    LogPage,
    LogQuery,
    collect,
    explorer_url,
    filter_for,
    order_by,
    to_log_entry,
    validate_query,
)
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import (
    BackendError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
    InspectorError,
    InvalidInput,
)
from openrl_inspect.core.settings import load

BACKEND = "cloud_logging"
ENV_PREFIX = "OPENRL_INSPECT_CLOUD_LOGGING_"
# Seconds to wait for a TCP connection, at most; the rest of the budget is for reading.
_CONNECT_TIMEOUT_S = 5.0
# Beyond the answer's own budget, how long the event loop waits for the worker thread
# before giving up on it. requests' timeout bounds the connect and each socket read,
# not DNS, credential look-ups or an answer that keeps dripping in.
_BACKSTOP_GRACE_S = 2.0


def load_settings(
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> CloudLoggingSettings:
    return load(CloudLoggingSettings, ENV_PREFIX, environ, overrides, flags)


class CloudLoggingSource:
    """A :class:`LogSource` reading Cloud Logging's ``entries:list``.

    The client, and with it Application Default Credentials, is created on first use
    (in the worker thread: finding credentials may touch the metadata server). It talks
    REST in production too: one transport, the one the tests exercise.
    """

    def __init__(self, settings: CloudLoggingSettings) -> None:
        self._settings = settings
        self._client: Any = None
        self._lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None

    async def entries(self, query: LogQuery, cursor: str | None = None) -> LogPage:
        query = validate_query(query, self._settings)
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._settings.max_threads)
        deadline = time.monotonic() + self._settings.timeout_s
        with timed(BACKEND):
            try:
                # Backstop: the per-request timeout normally fires first. If it does not,
                # the answer is given up and the thread left to finish on its own (it
                # holds a limiter slot meanwhile, so stuck threads cannot pile up).
                with anyio.fail_after(self._settings.timeout_s + _BACKSTOP_GRACE_S):
                    return await anyio.to_thread.run_sync(
                        functools.partial(self._read, query, cursor, deadline),
                        abandon_on_cancel=True,
                        limiter=self._limiter,
                    )
            except TimeoutError:
                raise BackendTimeout(BACKEND, "cloud logging did not answer in time") from None

    def describe(self, query: LogQuery) -> tuple[str, str | None]:
        query = validate_query(query, self._settings)
        # The project: the configured one (the credentials' own is known only after a
        # read, in the worker thread).
        project = self._settings.project
        filter_ = filter_for(query, self._settings, project)
        link = None if project is None else explorer_url(project, filter_, query.start, query.end)
        return filter_, link

    async def aclose(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            await anyio.to_thread.run_sync(client.close)

    # ------------------------------------------------------------ in the worker thread

    def _read(self, query: LogQuery, cursor: str | None, deadline: float) -> LogPage:
        try:
            client = self._get_client()
            project = str(client.project)
            filter_ = filter_for(query, self._settings, project)
            return collect(
                functools.partial(self._fetch, client, project, filter_, order_by(query)),
                lambda raw: to_log_entry(raw, self._settings),
                query=query,
                settings=self._settings,
                filter_=filter_,
                cursor=cursor,
                deadline=deadline,
                project=project,
            )
        except InspectorError:
            raise
        except Exception as exc:
            raise translate_error(exc, had_cursor=cursor is not None) from exc

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    # lazy: google-cloud-logging and google-auth take about a second to import; they load
    # when the backend is first used.
    def _make_client(self) -> Any:
        from google.cloud.logging import Client

        kwargs: dict[str, Any] = {"project": self._settings.project, "_use_grpc": False}
        if self._settings.anonymous:
            from google.auth.credentials import AnonymousCredentials

            anonymous: Any = AnonymousCredentials  # google-auth is not annotated
            kwargs["credentials"] = anonymous()
        if self._settings.api_endpoint is not None:
            kwargs["client_options"] = {"api_endpoint": self._settings.api_endpoint}
        from google.auth.exceptions import DefaultCredentialsError

        make: Any = Client  # google-cloud-logging is not annotated
        try:
            return make(**kwargs)
        except DefaultCredentialsError as exc:
            raise BackendUnavailable(BACKEND, "no credentials found for cloud logging") from exc
        except OSError as exc:  # google-cloud-core: no project given nor found
            raise BackendUnavailable(BACKEND, "no project configured for cloud logging") from exc

    def _fetch(
        self,
        client: Any,
        project: str,
        filter_: str,
        order: str,
        token: str | None,
        size: int,
        left: float,
    ) -> tuple[Sequence[Any], str | None]:
        # lazy: the SDK loads with the first read (see _make_client).
        from google.api_core.page_iterator import HTTPIterator

        read = max(left, 0.05)
        pager: Any = HTTPIterator  # google-api-core is not annotated
        iterator = pager(
            client=client,
            # The client's own connection (auth, user agent, endpoint), with a timeout:
            # requests applies it to the connect and to every read of the socket.
            api_request=functools.partial(
                client._connection.api_request, timeout=(min(_CONNECT_TIMEOUT_S, read), read)
            ),
            path="/entries:list",
            item_to_value=_raw_item,
            items_key="entries",
            page_token=token,
            extra_params={
                "resourceNames": [f"projects/{project}"],
                "filter": filter_,
                "orderBy": order,
                "pageSize": size,
            },
        )
        # entries:list is a read over POST; the client sets the same on its iterator.
        iterator._HTTP_METHOD = "POST"
        try:
            page = next(iterator.pages)
            items = list(page)
        except StopIteration:
            return [], None
        except (AttributeError, TypeError, KeyError) as exc:
            raise BackendProtocolError(
                BACKEND, "cloud logging sent an answer not understood"
            ) from exc
        next_token = iterator.next_page_token
        if next_token is not None and not isinstance(next_token, str):
            raise BackendProtocolError(BACKEND, "cloud logging sent a page token not understood")
        return items, next_token or None


def _raw_item(_iterator: Any, item: Any) -> Any:
    return item


# lazy: the SDK's exception classes load with it (see _make_client).
def translate_error(exc: BaseException, *, had_cursor: bool) -> BackendError | InvalidInput:
    """An SDK, auth or transport exception as one of ``adapters.errors``.

    Order matters: requests' JSONDecodeError is also a ValueError and a
    RequestException, and several google.auth errors are ValueErrors too.
    """
    import requests
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, requests.exceptions.Timeout | api.DeadlineExceeded | api.GatewayTimeout):
        return BackendTimeout(BACKEND, "cloud logging did not answer in time")
    if isinstance(exc, auth.TransportError):
        return BackendUnavailable(BACKEND, "cloud logging credentials could not be refreshed")
    if isinstance(exc, api.Unauthorized | api.Forbidden | auth.GoogleAuthError):
        return BackendUnavailable(BACKEND, "cloud logging refused the credentials")
    if isinstance(exc, api.BadRequest):
        if had_cursor:
            # Our filters are generated and escaped, so a refusal of a request that
            # resumed from a cursor is most likely its page token (expired or forged).
            return InvalidInput("cloud logging refused the cursor; start again without it")
        return BackendProtocolError(BACKEND, "cloud logging refused the request")
    if isinstance(exc, api.NotFound):
        return BackendUnavailable(BACKEND, "cloud logging project not found")
    if isinstance(exc, api.GoogleAPICallError):
        return BackendUnavailable(BACKEND, f"cloud logging answered HTTP {exc.code}")
    if isinstance(exc, requests.exceptions.JSONDecodeError | ValueError):
        return BackendProtocolError(BACKEND, "cloud logging sent an answer not understood")
    if isinstance(exc, requests.exceptions.RequestException | OSError):
        return BackendUnavailable(BACKEND, "cloud logging is unreachable")
    return BackendProtocolError(BACKEND, "cloud logging call failed unexpectedly")
