"""Code generation: per-robot C99 for τ, its jets, M, g, forward dynamics and frame Jacobians."""
