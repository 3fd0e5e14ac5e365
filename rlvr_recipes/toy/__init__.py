"""CPU-only demonstrations: the toy softmax bandit and the prompt-population simulator."""
