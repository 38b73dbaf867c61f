"""The Differentiable Tree Machine and the (Terminating) Differentiable Tree Experts as one model.

A tree is a TPR ``(filler_width, num_roles)`` (see ``tree_interpreter.py``). Its filler has two parts:

* the *content* part (``filler_dim``): a learned filler per base label; every symbol (a leaf the
  tokenizer's symbol rule calls a symbol) has the same learned "symbol" filler;
* the *identity* part (``max_symbols``): a symbol carries the one-hot of its first-appearance index in
  the input tree; other labels carry zeros.

Only the content part is encoded for the controller, and the interpreter's operations are linear maps on
the role axis that move both parts together. So the controller cannot tell symbols apart, and an output
position's symbol is read from the identity part: the tree is copied without looking at the names.
Renaming the input's symbols renames the output's, and a name never seen in training comes out right, by
construction (the lexical generalisation the papers measure, made a guarantee).

Memory: tree 0 is the empty tree (so that ``CONS(empty, empty, s)`` makes a new leaf ``s``), tree 1 the
input; step ``t`` appends tree ``t + 2``. Every sample has the same number of trees at every step, so the
controller's attention needs no mask.

Controllers (``config.controller``):

* ``dtm``: a different transformer encoder layer per step (parameters grow with the steps);
* ``dte``: one mixture of ``num_experts`` encoder layers shared by every step; the router is an encoder
  layer over the same tokens whose first output, concatenated with a sinusoidal encoding of the step,
  goes through a linear map to the expert probabilities; with ``top_k < num_experts`` only the ``top_k``
  best experts run for a sample (renormalised), as in the paper's sparse ablation. Each expert proposes
  operation weights, argument weights and a root filler through the shared heads; the proposals are
  averaged with the router's weights.

Termination (``config.termination``): ``oracle`` runs ``num_steps`` steps. ``sluggish`` is the
Terminating DTE's rule (§3.2): two predictors, the damper and the explorer, each one number per step (times
``termination_scale``), trained by cross-entropy on the labels of the paper's Eq. (2) and (3); the model's
answer is the tree after the damper's step. Where the paper is terse we chose: a choice ``s`` of the local
set ``{i - 4, i, i + 5}`` (clipped to the steps) scores ``loss(s) / index_penalty**idx(s)`` and the lowest
wins, so a later step must be clearly better to be chosen; the main loss is at the later of the two
predictors' steps, the other steps looked at add ``residual_loss_weight`` times their loss.

Compiled training (``model.compile(fullgraph=True, dynamic=False)``): a graph cannot have shapes or a number of
steps that depend on values, so inside one the sparse routing runs every expert on every sample with the gates
of the others zero, and the sluggish rule runs all ``num_steps`` steps and makes its choices with tensors. The
loss and the gradients are eager mode's; an expert no sample chose gets a zero gradient where eager mode leaves
none. Input checks become assertions the graph keeps (without the position of the offending value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.utils import ModelOutput

from .configuration_dte import DTEConfig
from .loading import StrictLoadingMixin
from .tree_interpreter import TreeInterpreter, num_roles_for_depth

EMPTY_ID = 0
SYMBOL_ID = 1
NO_SYMBOL = -1
IGNORE_INDEX = -100
# Pointer probabilities are the identity part normalised; a tiny floor keeps log() finite where a blend left
# no mass at all.
_POINTER_FLOOR = 1e-6


# Copied from hf_symbolinv.models.symbolinv.streams.is_compiling
def is_compiling() -> bool:
    """Whether ``torch.compile`` is tracing this call (its graph then needs shapes that do not depend on data)."""
    return torch.compiler.is_compiling()


# Copied from hf_symbolinv.models.symbolinv.streams.refused
def refused(bad: torch.Tensor, compiled_message: str) -> bool:
    """Whether any element of ``bad`` is set, so that the caller raises its detailed error (which reads the
    position from the data). Inside a compiled graph the check is an assertion the graph keeps, raising
    ``compiled_message`` without the position, and this returns False."""
    if is_compiling():
        torch._assert_async(~bad.any(), compiled_message)
        return False
    return bool(bad.any())


# Copied from hf_symbolinv.models.symbolinv.modeling_symbolinv.eager_attention_forward
def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    is_causal: bool = False,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention written out (softmax of scaled scores); returns the output ``(N, T, H, hd)`` and the weights.

    Masks are boolean (True: may attend), as SDPA takes them; ``is_causal`` without a mask means the
    square causal mask."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(-2, -1)) * scaling
    if is_causal and attention_mask is None:
        q_len, k_len = query.shape[-2], key.shape[-2]
        attention_mask = torch.ones(q_len, k_len, dtype=torch.bool, device=query.device).tril(k_len - q_len)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = F.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


class DTESelfAttention(nn.Module):
    """Multi-head self-attention over the controller's tokens, through the attention interface."""

    def __init__(self, config: DTEConfig) -> None:
        super().__init__()
        self.config = config
        self.num_heads = config.num_heads
        self.head_dim = config.d_model // config.num_heads
        self.scaling = self.head_dim**-0.5
        self.is_causal = False
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        batch, length, d_model = hidden.shape
        query, key, value = (
            part.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)
            for part in self.qkv(hidden).chunk(3, dim=-1)
        )
        attention = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        attended, _ = attention(
            self,
            query,
            key,
            value,
            None,
            scaling=self.scaling,
            dropout=self.config.dropout if self.training else 0.0,
            is_causal=False,
        )
        return self.out_proj(attended.reshape(batch, length, d_model))


class DTEEncoderLayer(GradientCheckpointingLayer):
    """A post-LN transformer encoder layer (the controller's unit: one per step for the DTM, one per expert
    and one for the router for the DTE)."""

    def __init__(self, config: DTEConfig) -> None:
        super().__init__()
        self.self_attn = DTESelfAttention(config)
        self.attn_norm = nn.LayerNorm(config.d_model)
        self.fc1 = nn.Linear(config.d_model, config.ffn_dim)
        self.fc2 = nn.Linear(config.ffn_dim, config.d_model)
        self.ffn_norm = nn.LayerNorm(config.d_model)
        self.dropout = config.dropout

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        attended = F.dropout(self.self_attn(hidden), p=self.dropout, training=self.training)
        hidden = self.attn_norm(hidden + attended)
        feed = self.fc2(F.dropout(F.gelu(self.fc1(hidden)), p=self.dropout, training=self.training))
        return self.ffn_norm(hidden + F.dropout(feed, p=self.dropout, training=self.training))


def sinusoidal_encoding(positions: torch.Tensor | int, dim: int, device: torch.device | None = None) -> torch.Tensor:
    """The transformer's sinusoidal encoding of integer ``positions`` (``(..., dim)``; ``(dim,)`` for an int)."""
    positions = torch.as_tensor(positions, dtype=torch.float32, device=device)
    frequencies = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim)
    angles = positions.unsqueeze(-1) * frequencies
    out = torch.zeros(*positions.shape, dim, device=device)
    out[..., 0::2] = torch.sin(angles)
    out[..., 1::2] = torch.cos(angles)[..., : dim // 2]
    return out


@dataclass
class DTEOutput(ModelOutput):
    """The model's output.

    Attributes:
        loss: the training loss (tree loss, plus the termination predictors' loss for ``sluggish``).
        logits: ``(batch, num_roles, vocab_size + max_symbols)`` every answer a position can take: the label
            logits, then the log-probabilities of copying each input symbol.
        label_logits: ``(batch, num_roles, vocab_size)`` label scores of the answer tree's positions
            (label 0: empty position, label 1: a symbol).
        symbol_probs: ``(batch, num_roles, max_symbols)`` which input symbol each position copies.
        num_steps: the steps whose tree is the answer (a 0-dim tensor from a compiled sluggish training forward).
        operation_weights: ``(batch, steps_run, 3)`` the weights of car, cdr, cons at every step up to the
            answer's (at all ``num_steps`` steps from a compiled sluggish training forward).
        trees: the memory ``(batch, num_trees, filler_width, num_roles)`` when asked for (likewise).
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    label_logits: torch.FloatTensor | None = None
    symbol_probs: torch.FloatTensor | None = None
    num_steps: int | torch.Tensor | None = None
    operation_weights: torch.FloatTensor | None = None
    trees: torch.FloatTensor | None = None


class DTEPreTrainedModel(StrictLoadingMixin, PreTrainedModel):
    config_class = DTEConfig
    base_model_prefix = "dte"
    main_input_name = "input_labels"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_attention_backend = False

    def _init_weights(self, module: nn.Module) -> None:
        # transformers' initialization helpers leave a weight alone once it was loaded from a checkpoint.
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            # Unit-variance fillers: labels start far apart (squared distance ~2 x filler_dim), so the
            # empty positions of a tree cost nothing from the start and the nodes dominate the loss.
            init.normal_(module.weight, std=1.0)
            if module.padding_idx is not None:
                weight = module.weight.detach().clone()
                weight[module.padding_idx] = 0.0
                init.copy_(module.weight, weight)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, TreeInterpreter):
            module.reset_operators()  # buffers that follow from max_depth, never saved: always computed
        elif isinstance(module, DTEForTreeTransduction):
            # After the module's own linear maps (``apply`` visits children first): see ``tree_encoder_init``.
            if self.config.tree_encoder_init == "zero":
                init.zeros_(module.tree_encoder.weight)
            init.normal_(module.special_tokens, std=0.02)
            init.zeros_(module.logit_scale)
            if module.damper is not None:
                # Small values, the last step a little ahead: training starts from the full number of steps.
                for predictor in (module.damper, module.explorer):
                    start = torch.zeros_like(predictor)
                    start[-1] = 0.05
                    init.copy_(predictor, start)


class DTEForTreeTransduction(DTEPreTrainedModel):
    """Tree to tree: the answer is the tree the interpreter holds after the last (or the damper's) step."""

    def __init__(self, config: DTEConfig) -> None:
        super().__init__(config)
        self.interpreter = TreeInterpreter(config.max_depth)
        d_model = config.d_model
        self.fillers = nn.Embedding(config.vocab_size, config.filler_dim, padding_idx=EMPTY_ID)
        # Label logits are -exp(logit_scale) x the squared distance to each label's filler.
        self.logit_scale = nn.Parameter(torch.zeros(()))
        # A tree enters the controller as one token: its content part, flattened and projected.
        self.tree_encoder = nn.Linear(config.filler_dim * self.interpreter.num_roles, d_model)
        # Two classification tokens: the operation weights are read at the first, the root filler at the second.
        self.special_tokens = nn.Parameter(torch.zeros(2, d_model))
        if config.controller == "dtm":
            self.step_layers = nn.ModuleList(DTEEncoderLayer(config) for _ in range(config.num_steps))
            self.experts = self.router_layer = self.router = None
        else:
            self.step_layers = None
            self.experts = nn.ModuleList(DTEEncoderLayer(config) for _ in range(config.num_experts))
            self.router_layer = DTEEncoderLayer(config)
            self.router = nn.Linear(2 * d_model, config.num_experts)
        self.operation_head = nn.Linear(d_model, 3)
        self.root_head = nn.Linear(d_model, config.filler_dim)
        self.argument_head = nn.Linear(d_model, 4)
        if config.termination == "sluggish":
            self.damper = nn.Parameter(torch.zeros(config.num_steps))
            self.explorer = nn.Parameter(torch.zeros(config.num_steps))
        else:
            self.damper = self.explorer = None
        self.gradient_checkpointing = False
        self.post_init()

    def save_pretrained(self, save_directory, *args, **kwargs):
        # Record the tree-transduction pipeline so pipeline(..., trust_remote_code=True) finds it; the relative
        # import also makes save_pretrained copy the pipeline file (and the tokenizer's) next to this one.
        from .pipeline_dte import PIPELINE_TASK, custom_pipeline_entry

        self.config.custom_pipelines = {PIPELINE_TASK: custom_pipeline_entry()}
        return super().save_pretrained(save_directory, *args, **kwargs)

    # -- trees in and out ------------------------------------------------------------------------------
    def input_trees(self, input_labels: torch.Tensor, input_symbols: torch.Tensor) -> torch.Tensor:
        """The TPRs ``(batch, filler_dim + max_symbols, num_roles)`` of the tokenizer's trees."""
        self._check_inputs(input_labels, input_symbols, "input")
        content = self.fillers(input_labels).transpose(1, 2)
        identity = F.one_hot(input_symbols.clamp(min=0), self.config.max_symbols).to(content.dtype)
        identity = identity * (input_symbols >= 0).unsqueeze(-1).to(content.dtype)
        return torch.cat([content, identity.transpose(1, 2)], dim=1)

    def _check_inputs(self, labels: torch.Tensor, symbols: torch.Tensor, name: str) -> None:
        roles = self.interpreter.num_roles
        if labels.dim() != 2 or labels.shape[1] != roles:
            raise ValueError(
                f"{name}_labels must be (batch, {roles}) for max_depth={self.config.max_depth}, "
                f"got {tuple(labels.shape)}"
            )
        if symbols.shape != labels.shape:
            raise ValueError(f"{name}_symbols must have the shape of {name}_labels, got {tuple(symbols.shape)}")
        # Dense checks (no boolean selection), so that a compiled graph keeps them as assertions.
        outside = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= self.config.vocab_size))
        outside_message = f"{name}_labels holds ids outside [0, {self.config.vocab_size}) (vocab_size)"
        if refused(outside, outside_message):
            raise ValueError(outside_message)
        too_many = symbols >= self.config.max_symbols
        if refused(too_many, f"{name}_symbols holds an index >= max_symbols={self.config.max_symbols}"):
            raise ValueError(
                f"{name}_symbols holds index {int(symbols.max())} >= max_symbols={self.config.max_symbols}"
            )
        disagree = (symbols >= 0) != (labels == SYMBOL_ID)
        if refused(disagree, f"{name}_symbols and {name}_labels disagree: a symbol index goes with label {SYMBOL_ID}"):
            row, col = disagree.nonzero()[0].tolist()
            raise ValueError(
                f"{name}_symbols and {name}_labels disagree at row {row}, position {col}: a symbol index goes "
                f"with label {SYMBOL_ID} and only with it"
            )

    def _label_fillers(self) -> torch.Tensor:
        """The label fillers as answers are read against them. The empty label's filler is never trained (here,
        where it is read without the embedding's padding rule): it stays zero, as everything the interpreter moves
        in from outside a tree is, so an empty position reads as empty from the first step on, and how many empty
        positions a tree has cannot change how it is read (a model can grow: ``resize_max_depth``). Models trained
        before this rule learned it, and read as they were trained."""
        fillers = self.fillers.weight
        return torch.cat([fillers[:1].detach(), fillers[1:]])

    def read_out(self, tree: torch.Tensor, num_symbols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Label logits ``(batch, roles, vocab)`` and symbol probabilities ``(batch, roles, max_symbols)`` of
        a TPR; ``num_symbols`` ``(batch,)`` limits the pointer to the symbols the input holds. An input with no
        symbol gets all-zero symbol probabilities (there is nothing to copy, and its answer holds no symbol)."""
        dim = self.config.filler_dim
        content = tree[:, :dim].transpose(1, 2)
        # Nearest filler, as the interpreter decodes.
        fillers = self._label_fillers()
        distances = content.square().sum(-1, keepdim=True) - 2 * content @ fillers.T + fillers.square().sum(-1)
        label_logits = -self.logit_scale.exp() * distances
        identity = tree[:, dim:].transpose(1, 2).clamp(min=0) + _POINTER_FLOOR
        present = torch.arange(self.config.max_symbols, device=tree.device) < num_symbols.unsqueeze(-1)
        identity = identity * present.unsqueeze(1).to(identity.dtype)
        # The sum is 0 only for an input with no symbol (a present symbol adds at least the floor): divide by 1
        # there, giving zeros with finite gradients instead of 0 / 0; every other row is divided as before.
        total = identity.sum(-1, keepdim=True)
        return label_logits, identity / torch.where(total > 0, total, 1.0)

    def tree_loss(
        self,
        label_logits: torch.Tensor,
        symbol_probs: torch.Tensor,
        labels: torch.Tensor,
        label_symbols: torch.Tensor,
        tree: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Cross-entropy of every position's label, plus the pointer's at positions whose answer is a symbol,
        per node of the answer trees (empty positions count, so a superfluous node costs); with
        ``config.mse_weight``, plus that times :meth:`squared_error` of ``tree``, the TPR read out."""
        label_nll = F.cross_entropy(label_logits.flatten(0, 1).float(), labels.flatten(), reduction="sum")
        is_symbol = label_symbols >= 0
        picked = symbol_probs.gather(-1, label_symbols.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        # Log only the probabilities an answer symbol picks: elsewhere (all of an input with no symbol, whose
        # probabilities are zero) log(0) * 0 would be NaN and the gradient 0 / 0.
        picked = torch.where(is_symbol, picked.float(), 1.0)
        pointer_nll = -picked.log().sum()
        nodes = ((labels != EMPTY_ID) & (labels != IGNORE_INDEX)).sum().clamp(min=1)
        if self.config.mse_weight:
            if tree is None:
                raise ValueError("tree_loss needs the tree read out (tree=) when config.mse_weight > 0")
            squared_error = self.squared_error(tree, labels, label_symbols)
            return (label_nll + pointer_nll + self.config.mse_weight * squared_error) / nodes
        return (label_nll + pointer_nll) / nodes

    def squared_error(self, tree: torch.Tensor, labels: torch.Tensor, label_symbols: torch.Tensor) -> torch.Tensor:
        """The squared distance of the TPRs ``tree`` from the answer trees, summed over the positions (see
        ``DTEConfig.mse_weight``): each position's content from its label's filler (an empty position's from
        zero), over the fillers' mean squared norm, and its symbol channel from the one-hot of its symbol (zero
        where the answer holds none). The symbol channel is taken as it is, not normalised as the pointer reads
        it: a symbol that arrives as a trace of a blended step (1e-4 of a tree) pays as much as a missing one."""
        counted = (labels != IGNORE_INDEX).unsqueeze(-1)
        dim = self.config.filler_dim
        content = tree[:, :dim].transpose(1, 2).float()
        fillers = self._label_fillers().float()
        label_error = (content - fillers[labels.clamp(min=0)]).square()
        filler_scale = fillers[1:].square().sum(-1).mean()
        identity = tree[:, dim:].transpose(1, 2).float()
        target = F.one_hot(label_symbols.clamp(min=0), identity.shape[-1]).float()
        target = target * (label_symbols >= 0).unsqueeze(-1)
        symbol_error = (identity - target).square()
        label_part = torch.where(counted, label_error, 0.0).sum() / filler_scale
        return label_part + torch.where(counted, symbol_error, 0.0).sum()

    # -- the controller --------------------------------------------------------------------------------
    def _heads(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        operations = self.operation_head(hidden[:, 0]).softmax(-1)
        root = self.root_head(hidden[:, 1])
        arguments = self.argument_head(hidden[:, 2:]).transpose(1, 2).softmax(-1)  # (batch, 4, trees)
        return operations, arguments, root

    def _controller(self, tokens: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.step_layers is not None:
            return self._heads(self.step_layers[step](tokens))
        routed = self.router_layer(tokens)[:, 0]
        step_code = sinusoidal_encoding(step, self.config.d_model, tokens.device).to(routed.dtype)
        gates = self.router(torch.cat([routed, step_code.expand_as(routed)], dim=-1)).softmax(-1)
        if self.config.top_k < self.config.num_experts:
            top, chosen = gates.topk(self.config.top_k, dim=-1)
            gates = torch.zeros_like(gates).scatter(-1, chosen, top / top.sum(-1, keepdim=True))
        if is_compiling():
            return self._dense_mixture(tokens, gates)
        batch, trees = tokens.shape[0], tokens.shape[1] - 2
        operations = tokens.new_zeros(batch, 3)
        arguments = tokens.new_zeros(batch, 4, trees)
        root = tokens.new_zeros(batch, self.config.filler_dim)
        for index, expert in enumerate(self.experts):
            rows = (gates[:, index] > 0).nonzero().squeeze(-1)
            if rows.numel() == 0:
                continue
            # Sparse routing: an expert runs only on the samples that chose it.
            expert_ops, expert_args, expert_root = self._heads(expert(tokens[rows]))
            weight = gates[rows, index].unsqueeze(-1)
            operations = operations.index_add(0, rows, weight * expert_ops)
            arguments = arguments.index_add(0, rows, weight.unsqueeze(-1) * expert_args)
            root = root.index_add(0, rows, weight * expert_root)
        return operations, arguments, root

    def _dense_mixture(
        self, tokens: torch.Tensor, gates: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The mixture of ``_controller`` with every expert run on every sample: the same sums (a gate of zero,
        an expert the sample did not choose, adds an exact zero), without the shapes of the sparse routing that
        depend on the data and that a compiled graph cannot have. Costs ``num_experts / top_k`` times the
        experts' compute of the sparse routing."""
        batch, trees = tokens.shape[0], tokens.shape[1] - 2
        operations = tokens.new_zeros(batch, 3)
        arguments = tokens.new_zeros(batch, 4, trees)
        root = tokens.new_zeros(batch, self.config.filler_dim)
        for index, expert in enumerate(self.experts):
            expert_ops, expert_args, expert_root = self._heads(expert(tokens))
            weight = gates[:, index].unsqueeze(-1)
            operations = operations + weight * expert_ops
            arguments = arguments + weight.unsqueeze(-1) * expert_args
            root = root + weight * expert_root
        return operations, arguments, root

    def run_steps(self, input_tree: torch.Tensor, num_steps: int) -> tuple[list[torch.Tensor], torch.Tensor]:
        """The memory after ``num_steps`` steps (a list of TPRs: empty tree, input, one per step) and the
        operation weights ``(batch, num_steps, 3)``."""
        if self.step_layers is not None and num_steps > len(self.step_layers):
            raise ValueError(
                f"num_steps={num_steps}: a DTM has one layer per step and this one has {len(self.step_layers)} "
                "(config.num_steps); a DTE (controller='dte') runs any number of steps"
            )
        trees = [torch.zeros_like(input_tree), input_tree]
        identity_width = self.config.max_symbols
        batch = input_tree.shape[0]
        # A tree's token never changes once it is in memory: encode each tree once, not at every step.
        encoded = [self._encode_tree(tree, slot) for slot, tree in enumerate(trees)]
        operation_weights = []
        for step in range(num_steps):
            memory = torch.stack(trees, dim=1)
            tokens = torch.cat([self.special_tokens.expand(batch, -1, -1).to(encoded[0].dtype), *encoded], dim=1)
            operations, arguments, root = self._controller(tokens, step)
            if self.config.hardness:
                operations = toward_choice(operations, self.config.hardness)
                arguments = toward_choice(arguments, self.config.hardness)
            # The new root is a base label or a new node: never a symbol's identity.
            root = torch.cat([root, root.new_zeros(batch, identity_width)], dim=-1)
            trees.append(self.interpreter.step(memory, operations, arguments, root))
            encoded.append(self._encode_tree(trees[-1], len(trees) - 1))
            operation_weights.append(operations)
        return trees, torch.stack(operation_weights, dim=1)

    def _encode_tree(self, tree: torch.Tensor, slot: int) -> torch.Tensor:
        """The controller's token ``(batch, 1, d_model)`` of a tree in memory slot ``slot``: its content part,
        flattened and projected, plus a sinusoidal code of the slot (no parameter per slot, so a model runs any
        number of steps: more than it was trained with, or the sluggish rule's later choices)."""
        content = tree[:, : self.config.filler_dim]
        slot_code = sinusoidal_encoding(slot, self.config.d_model, tree.device).to(content.dtype)
        if self.config.controller_depth is None:
            return (self.tree_encoder(content.flatten(1)) + slot_code).unsqueeze(1)
        # Breadth-first numbering: the levels down to controller_depth are the first positions, so the encoder's
        # columns for them are read and the others never enter the product.
        read = num_roles_for_depth(self.config.controller_depth)
        weight = self.tree_encoder.weight.view(self.config.d_model, self.config.filler_dim, -1)[..., :read]
        encoded = F.linear(content[..., :read].flatten(1), weight.flatten(1), self.tree_encoder.bias)
        return (encoded + slot_code).unsqueeze(1)

    @torch.no_grad()
    def resize_max_depth(self, max_depth: int) -> None:
        """Grow the deepest tree the model takes to ``max_depth`` (in place; ``config.max_depth`` follows).

        Positions are numbered breadth-first, so the old positions keep their numbers; the new, deeper positions
        get zero weights in the tree encoder: the controller reads a tree exactly as before and ignores what lies
        below the old depth. Where no step pushes a node below the old depth (an input at least ``num_steps``
        levels shallower), every answer is unchanged; elsewhere the grown model keeps nodes the old one dropped.
        A model trained on shallow trees (cheaper: a step costs in proportion to the positions) is grown this
        way to take deeper ones. Shrinking is refused: it would drop trained weights."""
        old_depth = self.config.max_depth
        if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < old_depth:
            raise ValueError(f"max_depth={max_depth!r}: a model only grows (it has max_depth={old_depth})")
        if max_depth == old_depth:
            return
        if self.fillers.weight[EMPTY_ID].any():
            raise ValueError(
                "this model's empty filler is not zero (it was trained before the empty label's filler was kept at "
                "zero): its new, deeper positions would not read as empty, so growing it would change its answers"
            )
        self.config.max_depth = max_depth
        try:
            self.config.validate_combinations()  # the deepest a tree may be
        except ValueError:
            self.config.max_depth = old_depth
            raise
        old, dim = self.tree_encoder, self.config.filler_dim
        interpreter = TreeInterpreter(max_depth).to(old.weight.device)
        old_roles, roles, width = self.interpreter.num_roles, interpreter.num_roles, old.out_features
        encoder = nn.Linear(dim * roles, width, device=old.weight.device, dtype=old.weight.dtype)
        encoder.weight.zero_()
        encoder.weight.view(width, dim, roles)[:, :, :old_roles] = old.weight.view(width, dim, old_roles)
        encoder.bias.copy_(old.bias)
        encoder.weight.requires_grad_(old.weight.requires_grad)
        encoder.bias.requires_grad_(old.bias.requires_grad)
        self.tree_encoder, self.interpreter = encoder, interpreter

    # -- forward ---------------------------------------------------------------------------------------
    def answer_steps(self) -> int:
        """The steps whose tree is the answer: ``num_steps``, or the damper's choice for ``sluggish``."""
        if self.damper is None:
            return self.config.num_steps
        return int(self.damper.argmax()) + 1

    def forward(
        self,
        input_labels: torch.LongTensor,
        input_symbols: torch.LongTensor,
        num_symbols: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
        label_symbols: torch.LongTensor | None = None,
        output_trees: bool | None = None,
        return_dict: bool | None = None,
        num_items_in_batch: int | None = None,
        num_steps: int | None = None,
        **kwargs,
    ) -> DTEOutput | tuple:
        """Args:
        input_labels: ``(batch, num_roles)`` label id per tree position (0 empty, 1 symbol).
        input_symbols: ``(batch, num_roles)`` first-appearance index of the symbol there, -1 elsewhere.
        num_symbols: ``(batch,)`` distinct symbols of each input (default: counted from ``input_symbols``).
        labels, label_symbols: the answer trees in the same form (``-100`` labels are ignored).
        num_items_in_batch: passed by ``Trainer``; unused (the loss is already per answer node of the batch).
        num_steps: run this many interpreter steps instead of the config's (or the damper's choice), e.g. an
            oracle count for longer inputs; not while a sluggish model trains, which chooses its own.
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if kwargs:
            raise TypeError(f"DTEForTreeTransduction.forward got unknown arguments: {sorted(kwargs)}")
        if num_symbols is None:
            num_symbols = input_symbols.max(dim=-1).values + 1
        input_tree = self.input_trees(input_labels, input_symbols)
        if labels is not None:
            if label_symbols is None:
                raise ValueError("labels need label_symbols (the symbol index of each answer position, -1 elsewhere)")
            self._check_inputs(labels, label_symbols, "label")
            unknown = label_symbols >= num_symbols.unsqueeze(-1)
            if refused(unknown, "label_symbols names a symbol the input does not hold"):
                raise ValueError("label_symbols names a symbol the input does not hold")

        sluggish = self.damper is not None and self.training and labels is not None
        if sluggish and num_steps is not None:
            raise ValueError("num_steps: a sluggish model in training chooses its own steps; call .eval() first")
        if sluggish and is_compiling():
            loss, steps, trees, operation_weights, label_logits, symbol_probs = self._sluggish_forward_all_steps(
                input_tree, num_symbols, labels, label_symbols
            )
        elif sluggish:
            loss, steps, trees, operation_weights, label_logits, symbol_probs = self._sluggish_forward(
                input_tree, num_symbols, labels, label_symbols
            )
        else:
            steps = self.answer_steps() if num_steps is None else num_steps
            trees, operation_weights = self.run_steps(input_tree, steps)
            label_logits, symbol_probs = self.read_out(trees[-1], num_symbols)
            loss = None
            if labels is not None:
                loss = self.tree_loss(label_logits, symbol_probs, labels, label_symbols, trees[-1])
        memory = torch.stack(trees, dim=1) if output_trees else None
        output = DTEOutput(
            loss=loss,
            logits=torch.cat([label_logits, pointer_log_probs(symbol_probs)], dim=-1),
            label_logits=label_logits,
            symbol_probs=symbol_probs,
            num_steps=steps,
            operation_weights=operation_weights,
            trees=memory,
        )
        return output if return_dict else output.to_tuple()

    def _sluggish_forward(
        self,
        input_tree: torch.Tensor,
        num_symbols: torch.Tensor,
        labels: torch.Tensor,
        label_symbols: torch.Tensor,
    ) -> tuple:
        config = self.config
        last = config.num_steps - 1
        # The labels are decisions, not part of the graph: the predictors learn only through the cross-entropy.
        damper_probs = (config.termination_scale * self.damper.detach()).softmax(-1)
        explorer_probs = (config.termination_scale * self.explorer.detach()).softmax(-1)
        i_damp, i_expl = int(damper_probs.argmax()), int(explorer_probs.argmax())
        choices = [min(max(i_damp + offset, 0), last) for offset in (-4, 0, 5)]
        looked_at = sorted({i_damp, i_expl, *choices})
        trees, operation_weights = self.run_steps(input_tree, max(looked_at) + 1)
        losses, outputs = {}, {}
        for index in looked_at:
            # trees[index + 2] is the tree after index + 1 steps.
            outputs[index] = self.read_out(trees[index + 2], num_symbols)
            losses[index] = self.tree_loss(*outputs[index], labels, label_symbols, trees[index + 2])
        threshold = config.confidence_threshold
        damper_target = i_expl if float(explorer_probs[i_expl]) >= threshold else i_damp
        if float(damper_probs[i_damp]) >= threshold and i_damp == i_expl:
            scores = [float(losses[c].detach()) / config.index_penalty**idx for idx, c in enumerate(choices)]
            explorer_target = choices[min(range(len(choices)), key=scores.__getitem__)]
        else:
            explorer_target = i_expl
        termination_loss = F.cross_entropy(
            config.termination_scale * self.damper.unsqueeze(0),
            torch.tensor([damper_target], device=self.damper.device),
        ) + F.cross_entropy(
            config.termination_scale * self.explorer.unsqueeze(0),
            torch.tensor([explorer_target], device=self.explorer.device),
        )
        main = max(i_damp, i_expl)
        residual = [losses[index] for index in looked_at if index != main]
        loss = losses[main] + termination_loss
        if residual:
            loss = loss + config.residual_loss_weight * torch.stack(residual).mean()
        label_logits, symbol_probs = outputs[i_damp]
        return loss, i_damp + 1, trees[: i_damp + 3], operation_weights[:, : i_damp + 1], label_logits, symbol_probs

    def _sluggish_forward_all_steps(
        self,
        input_tree: torch.Tensor,
        num_symbols: torch.Tensor,
        labels: torch.Tensor,
        label_symbols: torch.Tensor,
    ) -> tuple:
        """``_sluggish_forward`` without a decision taken in Python, for a compiled graph: the steps the rule looks
        at follow from the predictors' values, so every one of the ``num_steps`` steps is run and scored, and the
        rule's choices are tensors that select and mask. The loss and its gradients are ``_sluggish_forward``'s;
        the answer's step count is a 0-dim tensor, and the trees and operation weights are those of every step
        (their number cannot depend on a value inside a graph)."""
        config = self.config
        last = config.num_steps - 1
        damper_probs = (config.termination_scale * self.damper.detach()).softmax(-1)
        explorer_probs = (config.termination_scale * self.explorer.detach()).softmax(-1)
        i_damp, i_expl = damper_probs.argmax(), explorer_probs.argmax()
        offsets = torch.tensor([-4, 0, 5], device=i_damp.device)
        choices = (i_damp + offsets).clamp(0, last)
        trees, operation_weights = self.run_steps(input_tree, config.num_steps)
        # trees[index + 2] is the tree after index + 1 steps.
        outputs = [self.read_out(trees[index + 2], num_symbols) for index in range(config.num_steps)]
        losses = torch.stack(
            [self.tree_loss(*output, labels, label_symbols, trees[index + 2]) for index, output in enumerate(outputs)]
        )
        threshold = config.confidence_threshold
        # Indexing with a 0-dim tensor reads its value in Python: select with index_select, or take the max.
        damper_target = torch.where(explorer_probs.max() >= threshold, i_expl, i_damp)
        # float64, as the Python floats of the eager rule: a near-tie falls the same way.
        penalties = torch.tensor(
            [config.index_penalty**idx for idx in range(3)], dtype=torch.float64, device=losses.device
        )
        scores = losses.detach().double().index_select(0, choices) / penalties
        agree = (damper_probs.max() >= threshold) & (i_damp == i_expl)
        explorer_target = torch.where(agree, _select(choices, scores.argmin()), i_expl)
        termination_loss = F.cross_entropy(
            config.termination_scale * self.damper.unsqueeze(0), damper_target.unsqueeze(0)
        ) + F.cross_entropy(config.termination_scale * self.explorer.unsqueeze(0), explorer_target.unsqueeze(0))
        main = torch.maximum(i_damp, i_expl)
        steps = torch.arange(config.num_steps, device=losses.device)
        looked_at = (steps == i_damp) | (steps == i_expl) | (steps.unsqueeze(-1) == choices).any(-1)
        residual = looked_at & (steps != main)
        count = residual.sum()
        residual_mean = torch.where(residual, losses, 0.0).sum() / count.clamp(min=1)
        # No other step looked at: no residual term, as in the eager rule (adding an exact zero).
        loss = _select(losses, main) + termination_loss
        loss = loss + config.residual_loss_weight * torch.where(count > 0, residual_mean, 0.0)
        label_logits = _select(torch.stack([output[0] for output in outputs]), i_damp)
        symbol_probs = _select(torch.stack([output[1] for output in outputs]), i_damp)
        return loss, i_damp + 1, trees, operation_weights, label_logits, symbol_probs


def pointer_log_probs(symbol_probs: torch.Tensor) -> torch.Tensor:
    """``symbol_probs.log()``: -inf for a symbol the input does not hold (probability exactly zero), with a zero
    gradient there instead of 0 / 0. A compiled training graph differentiates every output, the logits too
    (with a zero gradient), so a plain log would put NaN into every gradient."""
    held = symbol_probs != 0
    return torch.where(held, torch.where(held, symbol_probs, 1.0).log(), -math.inf)


def toward_choice(weights: torch.Tensor, hardness: float) -> torch.Tensor:
    """``weights`` moved ``hardness`` of the way toward the one-hot of their largest entry (along the last axis), with
    the gradients of ``weights``: at 1 the forward pass chooses and the backward pass learns as if it had blended
    (the straight-through estimator)."""
    chosen = F.one_hot(weights.argmax(-1), weights.shape[-1]).to(weights.dtype)
    return weights + hardness * (chosen - weights).detach()


def _select(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[index]`` for a 0-dim index tensor, without reading the index's value in Python."""
    return values.index_select(0, index.reshape(1)).squeeze(0)


__all__ = ["DTEForTreeTransduction", "DTEOutput", "DTEPreTrainedModel"]
