"""Identification: the regressor and its time derivatives, base parameters, estimation from logs
(seed 000 §6)."""
