"""HTTP routers: parse, authorise, call one service method, shape the response."""
