"""doctor's exit codes, one per check that can fail, for launch scripts."""

EXIT_OK = 0
EXIT_NO_KEY = 10
EXIT_GATEWAY = 11
EXIT_MODEL = 12
EXIT_KEY_INVALID = 13
EXIT_NO_CREDIT = 14
EXIT_REFUSED = 15
EXIT_ACT_FAILED = 16
EXIT_LATENCY = 17
EXIT_NOT_WARM = 20

EXIT_CODES = (
    (EXIT_OK, 'no check failed and the model is warm (or --no-act); other WARN lines are '
              'advice'),
    (2, 'bad command line'),
    (EXIT_NO_KEY, 'no API key found (check 1)'),
    (EXIT_GATEWAY, 'the gateway does not answer GET /v1/health with ok, or its TLS '
                   'certificate is not trusted (check 2; --ca-file)'),
    (EXIT_MODEL, 'the model is not in the catalogue, or the catalogue is unreadable (check 3)'),
    (EXIT_KEY_INVALID, 'the key is refused: 401 (check 4)'),
    (EXIT_NO_CREDIT, 'the key has no credit: 402 (check 5)'),
    (EXIT_REFUSED, "the test call was refused (400/404/413/422; the server's message is shown)"),
    (EXIT_ACT_FAILED, 'the test call failed otherwise (5xx, timeout, unusable answer)'),
    (EXIT_LATENCY, 'a latency probe failed (check 6)'),
    (EXIT_NOT_WARM, 'nothing failed but the model is cold or warming (check 7); '
                    '--wait warms it first'),
)
