"""Brute-force decision procedures used only by the tests (independent of the engine).

LTL: does every word of a symbolic lasso satisfy a formula? We build, explicitly, the graph of
"atoms" of Lichtenstein and Pnueli over concrete valuations: a node is (lasso position, concrete
valuation of all symbols satisfying that position's step, truth bits of every ``X`` subformula and
of ``X u`` for every ``U`` subformula ``u``). The bits determine the truth of every subformula at
the node; an edge requires the bits to agree with the successor's truth values. A word violating
the formula exists iff, from a node where the formula is false, one can reach a non-trivial SCC
in which every eventuality that is promised is also fulfilled (SCCs are refined by deleting
nodes with unfulfilled promises, as in Emerson-Lei). No symbolic steps, no projection, no
on-the-fly expansion: a different route from the engine's.

Propositional: plain truth-table enumeration.
"""

from __future__ import annotations

import itertools

from hf_symbolinv.logic import Atom, Formula, Trace


def _symbols(*formulas: Formula) -> list[str]:
    names: list[str] = []
    for f in formulas:
        for node in f.walk():
            if isinstance(node, Atom) and node.name not in names:
                names.append(node.name)
    return names


def eval_prop(f: Formula, valuation: dict[str, bool]) -> bool:
    op = f.op
    if op == "ap":
        return valuation[f.name]
    if op == "true":
        return True
    if op == "false":
        return False
    if op == "not":
        return not eval_prop(f.children[0], valuation)
    a = eval_prop(f.children[0], valuation)
    b = eval_prop(f.children[1], valuation)
    if op == "and":
        return a and b
    if op == "or":
        return a or b
    if op == "equiv":
        return a == b
    if op == "xor":
        return a != b
    raise ValueError(op)


def valuations(names: list[str]):
    for values in itertools.product((False, True), repeat=len(names)):
        yield dict(zip(names, values))


def all_completions_satisfy(f: Formula, assignment: dict[str, bool]) -> bool:
    names = _symbols(f)
    if any(name not in names for name in assignment):
        return False
    free = [n for n in names if n not in assignment]
    return all(eval_prop(f, {**assignment, **v}) for v in valuations(free))


def is_satisfiable_prop(f: Formula) -> bool:
    return any(eval_prop(f, v) for v in valuations(_symbols(f)))


class _Closure:
    def __init__(self, f: Formula) -> None:
        self.subformulas: list[Formula] = []
        seen = set()
        for node in f.walk():
            if node not in seen:
                seen.add(node)
                self.subformulas.append(node)
        self.next_nodes = [n for n in self.subformulas if n.op == "X"]
        self.until_nodes = [n for n in self.subformulas if n.op == "U"]
        self.n_bits = len(self.next_nodes) + len(self.until_nodes)

    def truth(self, valuation: dict[str, bool], bits: tuple[bool, ...]) -> dict[Formula, bool]:
        """Truth of every subformula at a node."""
        nx = {n: bits[k] for k, n in enumerate(self.next_nodes)}
        nu = {n: bits[len(self.next_nodes) + k] for k, n in enumerate(self.until_nodes)}
        values: dict[Formula, bool] = {}
        for node in reversed(self.subformulas):  # children before parents in reversed pre-order
            self._value(node, valuation, nx, nu, values)
        return values

    def _value(self, node, valuation, nx, nu, values):
        if node in values:
            return values[node]
        op = node.op
        kids = [self._value(c, valuation, nx, nu, values) for c in node.children]
        if op == "ap":
            v = valuation[node.name]
        elif op == "true":
            v = True
        elif op == "false":
            v = False
        elif op == "not":
            v = not kids[0]
        elif op == "and":
            v = kids[0] and kids[1]
        elif op == "or":
            v = kids[0] or kids[1]
        elif op == "equiv":
            v = kids[0] == kids[1]
        elif op == "xor":
            v = kids[0] != kids[1]
        elif op == "X":
            v = nx[node]
        elif op == "U":
            v = kids[1] or (kids[0] and nu[node])
        else:
            raise ValueError(op)
        values[node] = v
        return v


def _sccs(nodes: list, succ: dict) -> list[list]:
    """Tarjan's algorithm (iterative) restricted to ``nodes``."""
    allowed = set(nodes)
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    result = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in allowed:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                result.append(comp)
    return result


def some_word_satisfies(f: Formula, trace: Trace) -> bool:
    """Is there a concrete word of ``trace`` satisfying ``f``? (explicit atom graph)"""
    closure = _Closure(f)
    names = _symbols(f, *trace.steps)
    steps = trace.steps
    n_pos = len(steps)
    succ_pos = [i + 1 for i in range(n_pos)]
    succ_pos[-1] = len(trace.prefix)
    # All nodes per position, their truth tables and their "signature" (what a predecessor's bits
    # must equal).
    truth: dict = {}
    by_signature: list[dict] = []
    for i, step in enumerate(steps):
        sig_index: dict = {}
        for val in valuations(names):
            if not eval_prop(step, val):
                continue
            key_val = tuple(val[n] for n in names)
            for bits in itertools.product((False, True), repeat=closure.n_bits):
                values = closure.truth(val, bits)
                node = (i, key_val, bits)
                truth[node] = values
                signature = tuple(values[n.children[0]] for n in closure.next_nodes) + tuple(
                    values[u] for u in closure.until_nodes
                )
                sig_index.setdefault(signature, []).append(node)
        by_signature.append(sig_index)
    succ: dict = {}
    for node in truth:
        i, _, bits = node
        succ[node] = by_signature[succ_pos[i]].get(bits, [])
    initial = [node for node in truth if node[0] == 0 and truth[node][f]]
    # Reachable part.
    reach = set(initial)
    todo = list(initial)
    while todo:
        node = todo.pop()
        for w in succ[node]:
            if w not in reach:
                reach.add(w)
                todo.append(w)
    pending = [sorted(reach)]
    while pending:
        part = pending.pop()
        for comp in _sccs(part, succ):
            members = set(comp)
            if len(comp) == 1 and comp[0] not in succ[comp[0]]:
                continue  # trivial SCC
            bad = set()
            for u in closure.until_nodes:
                g = u.children[1]
                if any(truth[n][u] for n in comp) and not any(truth[n][g] for n in comp):
                    bad |= {n for n in comp if truth[n][u]}
            if not bad:
                return True
            rest = [n for n in comp if n not in bad]
            if rest:
                pending.append(sorted(rest))
            del members
    return False


def all_words_satisfy(f: Formula, trace: Trace) -> bool:
    from hf_symbolinv.logic import Not

    return not some_word_satisfies(Not(f), trace)
