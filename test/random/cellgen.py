"""Random well-formed cells over the whole cell language.

Each generated file holds one to three cells. A cell has 1-3 inputs of
different widths, 1-3 states, and a step in which products read inputs,
states, intermediates and new states in any order; it uses every function
(sigmoid tanh relu exp log softplus), split, concat, layernorm with and
without gain and bias, scalar constants, shared weights and explicit
outputs. Shapes are exact linear combinations of dimension names, so every
cell passes the front end. Values stay bounded (exp, log and division get
arguments that cannot overflow or leave their domain) so that a mismatch
against the float64 reference is a compiler bug, not rounding.
"""

import random

INPUT_DIMS = ["I", "J", "K", "H"]
STATE_DIMS = ["H", "H", "G", "4"]


class Shape:
    """A linear combination of dimension names plus a constant."""

    def __init__(self, terms):
        self.terms = {k: v for k, v in terms.items() if v}

    @staticmethod
    def of(text):
        return Shape({"": int(text)} if text.isdigit() else {text: 1})

    def __add__(self, other):
        terms = dict(self.terms)
        for k, v in other.terms.items():
            terms[k] = terms.get(k, 0) + v
        return Shape(terms)

    def scaled(self, factor):
        return Shape({k: v * factor for k, v in self.terms.items()})

    def key(self):
        return tuple(sorted(self.terms.items()))

    def __eq__(self, other):
        return self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def parts(self):
        """Shapes that concatenate to this one (each term separately)."""
        out = []
        for name, coefficient in sorted(self.terms.items()):
            unit = Shape({name: 1}) if name else Shape({"": 1})
            if name:
                out += [unit] * coefficient
            else:
                out.append(Shape({"": coefficient}))
        return out

    def text(self):
        pieces = []
        for name, coefficient in sorted(self.terms.items(), key=lambda t: t[0] == ""):
            if not name:
                pieces.append(str(coefficient))
            elif coefficient == 1:
                pieces.append(name)
            else:
                pieces.append(f"{coefficient}*{name}")
        return "+".join(pieces)


class CellBuilder:
    def __init__(self, rng, name):
        self.rng = rng
        self.name = name
        self.inputs = []  # (name, Shape)
        self.states = []
        self.params = []  # (name, [Shape])
        self.values = []  # (name, Shape) readable now
        self.statements = []
        self.counter = 0
        self.output = None

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def param(self, shapes, reuse=0.3):
        for name, existing in self.params:
            if existing == shapes and self.rng.random() < reuse:
                return name
        prefix = "W" if len(shapes) == 2 else "b"
        name = self.fresh(prefix)
        self.params.append((name, shapes))
        return name

    def readable(self, shape):
        return [name for name, s in self.values if s == shape]

    # Expressions ------------------------------------------------------------
    def expr(self, shape, depth):
        rng = self.rng
        if depth <= 0:
            return self.leaf(shape)
        kind = rng.choices(
            ["leaf", "product", "unary", "binary", "scalar", "layernorm",
             "concat", "bias", "split", "safe"],
            [3, 4, 3, 4, 1, 1, 1, 1, 1, 2])[0]
        if kind == "leaf":
            return self.leaf(shape)
        if kind == "product":
            return self.product(shape, depth)
        if kind == "unary":
            f = rng.choice(["sigmoid", "tanh", "relu", "softplus", "-"])
            inner = self.expr(shape, depth - 1)
            return f"-({inner})" if f == "-" else f"{f}({inner})"
        if kind == "binary":
            op = rng.choice(["+", "-", "*"])
            return f"({self.expr(shape, depth - 1)} {op} {self.expr(shape, depth - 1)})"
        if kind == "scalar":
            c = rng.choice(["0.5", "2", "1.5", "0.25", "1e-1", "3"])
            form = rng.choice(["{c} * {e}", "{e} + {c}", "{e} / {c}", "{c} - {e}"])
            return "(" + form.format(c=c, e=self.expr(shape, depth - 1)) + ")"
        if kind == "layernorm":
            inner = self.expr(shape, depth - 1)
            if rng.random() < 0.5:
                return f"layernorm({inner})"
            g, b = self.param([shape], 0.2), self.param([shape], 0.2)
            return f"layernorm({inner}, {g}, {b})"
        if kind == "concat":
            parts = shape.parts()
            if len(parts) < 2:
                return self.leaf(shape)
            return "concat(" + ", ".join(self.expr(p, depth - 1) for p in parts) + ")"
        if kind == "bias":
            return f"({self.expr(shape, depth - 1)} + {self.param([shape])})"
        if kind == "split":
            return self.split(shape, depth)
        return self.safe(shape, depth)

    def leaf(self, shape):
        names = self.readable(shape)
        if names and self.rng.random() < 0.8:
            return self.rng.choice(names)
        # A product of anything readable makes a value of any shape.
        return self.product(shape, 0)

    def product(self, shape, depth):
        rng = self.rng
        if depth > 0 and rng.random() < 0.3:
            # A product of a value computed in this step (GRU's U @ (r * h)).
            source = rng.choice(self.values)[1]
            vector = self.expr(source, depth - 1)
            if not vector.isidentifier():
                vector = f"({vector})"
        else:
            vector, source = rng.choice(self.values)
        return f"{self.param([shape, source])} @ {vector}"

    def split(self, shape, depth):
        count = self.rng.choice([2, 3])
        names = [self.fresh("s") for _ in range(count)]
        whole = self.expr(shape.scaled(count), depth - 1)
        self.statements.append(f"{', '.join(names)} = split({whole}, {count})")
        for name in names:
            self.values.append((name, shape))
        return self.rng.choice(names)

    def safe(self, shape, depth):
        """exp, log and division with arguments kept in their domains."""
        e = self.expr(shape, depth - 1)
        return self.rng.choice([
            f"exp(-softplus({e}))",
            f"exp(tanh({e}))",
            f"log(1 + sigmoid({e}))",
            f"log(softplus({e}) + 0.5)",
            f"({e}) / (1.5 + tanh({self.expr(shape, depth - 1)}))",
            f"({e}) / (1 + ({e}) * ({e}))",
        ])

    # Statements -------------------------------------------------------------
    def define(self, shape=None):
        shape = shape or self.rng.choice([s for _, s in self.values])
        name = self.fresh("v")
        self.statements.append(f"{name} = {self.expr(shape, self.rng.randint(1, 3))}")
        self.values.append((name, shape))
        return name

    def update(self, state, shape):
        rng = self.rng
        e = self.expr(shape, rng.randint(1, 3))
        if rng.random() < 0.5:
            # Most real cells add a projection of an input (W @ x + ...).
            source_name, source = rng.choice(self.inputs)
            e = f"{self.param([shape, source])} @ {source_name} + {e}"
        # Every form keeps the state bounded: an unbounded update (h' = h * h
        # * ...) overflows float32 after a few steps, and no float32 result
        # can then match the float64 reference.
        form = rng.choices(["tanh", "gated", "leaky", "norm"], [3, 3, 2, 1])[0]
        if form == "tanh":
            rhs = f"tanh({e})"
        elif form == "gated":
            gate = self.fresh("z")
            self.statements.append(f"{gate} = sigmoid({self.expr(shape, rng.randint(1, 2))})")
            self.values.append((gate, shape))
            rhs = f"{gate} * {state} + (1 - {gate}) * tanh({e})"
        elif form == "leaky":
            rhs = f"0.5 * {state} + 0.5 * tanh({e})"
        else:
            rhs = f"layernorm({e})"
        self.statements.append(f"{state}' = {rhs}")
        self.values.append((state + "'", shape))

    def build(self):
        rng = self.rng
        for i in range(rng.randint(1, 3)):
            self.inputs.append((["x", "y", "u"][i], Shape.of(rng.choice(INPUT_DIMS))))
        for i in range(rng.randint(1, 3)):
            shape = Shape.of(rng.choice(STATE_DIMS))
            if rng.random() < 0.1:
                shape = shape.scaled(2)
            self.states.append((["h", "c", "m"][i], shape))
        self.values = list(self.inputs) + list(self.states)
        for state, shape in rng.sample(self.states, len(self.states)):
            for _ in range(rng.randint(0, 2)):
                self.define()
            self.update(state, shape)
        for _ in range(rng.choice([0, 0, 1, 2])):
            self.define()
        if rng.random() < 0.35:
            candidates = [n for n, _ in self.values if n not in dict(self.inputs)]
            self.output = rng.choice(candidates)
        return self

    def text(self):
        def decls(items):
            return ", ".join(f"{n}: [{', '.join(s.text() for s in shapes)}]"
                             for n, shapes in items)
        lines = [f"cell {self.name}({decls((n, [s]) for n, s in self.inputs)}) {{"]
        lines.append(f"  state {decls((n, [s]) for n, s in self.states)}")
        if self.params:
            lines.append(f"  param {decls(self.params)}")
        if self.output:
            lines.append(f"  output {self.output}")
        lines += [f"  {s}" for s in self.statements]
        lines.append("}")
        return "\n".join(lines) + "\n"


def generate_file(seed):
    """The text of one file and the names of its cells."""
    rng = random.Random(seed)
    names = [f"c{seed}_{i}" for i in range(rng.choice([1, 1, 1, 2, 3]))]
    cells = [CellBuilder(rng, name).build() for name in names]
    header = f"# random cell file, seed {seed} (test/random/cellgen.py)\n"
    return header + "\n".join(c.text() for c in cells), names


if __name__ == "__main__":
    import sys
    text, _ = generate_file(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    print(text, end="")
