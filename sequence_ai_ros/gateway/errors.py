"""The gateway's error responses: one exception per wire shape."""

import math

from starlette.responses import JSONResponse


class ApiError(Exception):
    """An error answered as `{"detail": "<message>"}` with the given status."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        """Return the HTTP response for this error."""
        return JSONResponse({'detail': self.detail}, self.status, headers=self.headers)


class WarmingUp(ApiError):
    """503 while a cold model loads: the only error whose detail is an object (see PROTOCOL)."""

    def __init__(self, model: str, retry_after_s: float, job_id: str) -> None:
        super().__init__(503, f'model {model} is warming up; retry in {retry_after_s:.2f} s')
        self.retry_after_s = retry_after_s
        self.job_id = job_id
        # The header takes whole seconds; never 0, which would invite an immediate retry.
        self.headers = {'Retry-After': str(max(1, math.ceil(retry_after_s)))}

    def response(self) -> JSONResponse:
        """Return the 503 with the structured detail the published client reads."""
        detail = {
            'status': 'warming_up',
            'retry_after_s': round(self.retry_after_s, 3),
            'warming_job_id': self.job_id,
            'message': self.detail,
        }
        return JSONResponse({'detail': detail}, 503, headers=self.headers)
