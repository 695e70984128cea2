"""
The local gateway: the hosted wire contract served on this machine (starlette + uvicorn).

`server.main` is the `gateway` command, `server.create_app` the ASGI app factory, and
`process.GatewayProcess` runs it as a subprocess for tests, benchmarks and the demo.
Nothing here imports rclpy.
"""
