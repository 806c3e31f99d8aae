"""MNN-LLM's samplers on one row of logits (NumPy, vectorized over the vocabulary).

sampler_type "greedy" takes the most likely token; "temperature", "topK", "topP", "minP" and
"penalty" apply that one step before drawing; "mixed" applies every step of `mixed_samplers` in
order (MNN's default order: penalty, topK, topP, minP, temperature). The steps:
  penalty      repetition_penalty p on tokens already in the sequence: logit / p where positive,
               logit * p where not (CTRL's rule, as transformers applies it)
  topK         keep the top_k most likely tokens
  topP         keep the most likely tokens whose probabilities first reach top_p together
  minP         keep the tokens at least min_p times as likely as the most likely
  temperature  logits / temperature
then a token is drawn from the softmax of what is kept, by a generator seeded with `seed`."""
import numpy as np

SAMPLERS = ("greedy", "temperature", "topK", "topP", "minP", "penalty", "mixed")
_STEPS = ("penalty", "topK", "topP", "minP", "temperature")
_ALIASES = {"top_k": "topK", "top_p": "topP", "min_p": "minP", "topk": "topK", "topp": "topP", "minp": "minP"}


class SamplerConfig:
    """The sampling keys of MNN-LLM's config.json (snake_case or MNN's camelCase names)."""

    def __init__(self):
        self.sampler_type = "greedy"
        self.mixed_samplers = ["penalty", "topK", "topP", "minP", "temperature"]
        self.temperature = 0.8
        self.top_k = 40
        self.top_p = 0.9
        self.min_p = 0.05
        self.repetition_penalty = 1.0
        self.seed = None

    def update(self, values):
        """Sets the keys present in `values`, all or none: a bad value raises ValueError and leaves
        the configuration as it was."""
        trial = SamplerConfig()
        trial.__dict__.update(self.__dict__)
        trial._apply(values)
        self.__dict__.update(trial.__dict__)

    def _apply(self, values):
        names = {"sampler_type": "sampler_type", "mixed_samplers": "mixed_samplers", "temperature": "temperature",
                 "top_k": "top_k", "topK": "top_k", "top_p": "top_p", "topP": "top_p", "min_p": "min_p",
                 "minP": "min_p", "repetition_penalty": "repetition_penalty", "penalty": "repetition_penalty",
                 "seed": "seed"}
        for key, value in values.items():
            if key not in names:
                continue
            setattr(self, names[key], value)
        kind = _ALIASES.get(self.sampler_type, self.sampler_type)
        if kind not in SAMPLERS:
            raise ValueError(f"sampler_type must be one of {', '.join(SAMPLERS)}, got {self.sampler_type!r}")
        self.sampler_type = kind
        steps = [_ALIASES.get(s, s) for s in self.mixed_samplers]
        unknown = [s for s in steps if s not in _STEPS]
        if unknown:
            raise ValueError(f"mixed_samplers: unknown step(s) {unknown} (steps: {', '.join(_STEPS)})")
        self.mixed_samplers = steps
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if int(self.top_k) < 1:
            raise ValueError(f"top_k must be >= 1, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must lie in [0, 1], got {self.min_p}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")

    def steps(self):
        if self.sampler_type == "mixed":
            return self.mixed_samplers
        return [] if self.sampler_type == "greedy" else [self.sampler_type]


def _softmax(logits):
    e = np.exp(logits - logits.max())
    return e / e.sum()


def filtered_logits(config, logits, history):
    """The logits after the configured steps (float64; removed tokens -inf)."""
    x = np.asarray(logits, np.float64).copy()
    for step in config.steps():
        if step == "penalty" and config.repetition_penalty != 1.0 and len(history):
            seen = np.unique(np.asarray(history, np.int64))
            v = x[seen]
            x[seen] = np.where(v > 0, v / config.repetition_penalty, v * config.repetition_penalty)
        elif step == "topK" and int(config.top_k) < x.size:
            cut = np.partition(x, x.size - int(config.top_k))[x.size - int(config.top_k)]
            x[x < cut] = -np.inf
        elif step == "topP":
            p = _softmax(x)
            order = np.argsort(-p, kind="stable")
            before = np.cumsum(p[order]) - p[order]  # mass of the more likely tokens
            x[order[before >= config.top_p]] = -np.inf
        elif step == "minP":
            p = _softmax(x)
            x[p < config.min_p * p.max()] = -np.inf
        elif step == "temperature":
            x = x / config.temperature
    return x


def sample(config, logits, history, rng):
    """The next token: the argmax for "greedy", else a draw from the filtered distribution."""
    if config.sampler_type == "greedy":
        return int(np.argmax(logits))
    p = _softmax(filtered_logits(config, logits, history))
    return int(rng.choice(p.size, p=p))
