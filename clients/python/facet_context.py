"""boto3 helper for Facet's application context (x-facet-context).

Requests made inside a ``with facet_context(...)`` block carry the block's
context, so Facet classifies them (a compaction, a flush, an ETL step) with
no change to the S3 calls themselves::

    import boto3
    from facet_context import install, facet_context

    s3 = install(boto3.client("s3", endpoint_url=...))
    with facet_context(workflow="etl-42", class_="compaction"):
        s3.get_object(Bucket="b", Key="k")   # x-facet-context: workflow=etl-42; class=compaction

The header is added before signing, so it is signed like any other. Blocks
nest (the inner one wins) and are per thread/async task (contextvars).
"""

import contextlib
import contextvars

HEADER = "x-facet-context"

_current = contextvars.ContextVar("facet_context", default=None)


def render(workflow=None, class_=None, **other):
    """The header value for a context block."""
    parts = []
    if workflow:
        parts.append("workflow=" + str(workflow))
    if class_:
        parts.append("class=" + str(class_))
    parts += ["%s=%s" % (k, v) for k, v in other.items()]
    return "; ".join(parts)


@contextlib.contextmanager
def facet_context(workflow=None, class_=None, **other):
    """Run the block's S3 requests (of installed clients) with this context."""
    token = _current.set(render(workflow, class_, **other))
    try:
        yield
    finally:
        _current.reset(token)


def _add_header(request, **_):
    value = _current.get()
    if value:
        request.headers[HEADER] = value


def install(client):
    """Make client send the current block's context; returns the client."""
    client.meta.events.register("before-sign.s3", _add_header, unique_id="facet-context")
    return client
