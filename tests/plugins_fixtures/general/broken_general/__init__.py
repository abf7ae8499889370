def register(ctx):
    raise RuntimeError("broken_general cannot register")
