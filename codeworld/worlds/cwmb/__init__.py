"""The CWMB world: vector states of a Gymnasium-style environment, its replay buffer and its
description (`cwmb.make_cwmb_world`), with the assists built from the env's spec and data: the
skeleton (`scaffold`), what the data shows (`relations`), the error summary (`feedback`), the
composition of the best programs (`compose`) and the finish step (`finish`)."""

__all__: list[str] = []  # nothing public here: a world is built by codeworld.worlds.make_world
