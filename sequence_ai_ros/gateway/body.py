"""Reading a request body without ever holding more than the size limit."""

from starlette.requests import Request

from .errors import ApiError


def _too_large(limit: int, what: str) -> ApiError:
    # The rest of the body is never read, so the connection cannot be reused.
    return ApiError(413, f'request body {what} the limit of {limit} bytes; send smaller '
                         'frames (224x224 JPEG at quality 90-95 is what the models read)',
                    {'Connection': 'close'})


async def read_body(request: Request, limit: int) -> bytes:
    """Read the whole body, or raise ApiError 413 once it is known to exceed `limit` bytes."""
    declared = request.headers.get('content-length')
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, 'Content-Length header is not a number') from None
        if size > limit:
            raise _too_large(limit, f'of {size} bytes exceeds')
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > limit:
            raise _too_large(limit, 'exceeds')
    return bytes(received)
