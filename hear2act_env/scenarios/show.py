"""Human-readable views of scenarios for the CLI."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hear2act_env.protocol.engine import ScenarioFacts
from hear2act_env.protocol.scenario import Scenario


def domain_table(scenarios: Sequence[Scenario]) -> str:
    """One line per domain: category, scenario counts per split, distinct need-attribute
    triples among its scenarios."""
    rows = [f"{'domain':<28}{'category':<15}{'train':>6}{'test':>6}{'triples':>9}  SGD services"]
    for domain in sorted({s.domain for s in scenarios}):
        group = [s for s in scenarios if s.domain == domain]
        splits = Counter(s.split for s in group)
        triples = len({tuple(n.attribute for n in s.needs) for s in group})
        rows.append(
            f"{domain:<28}{group[0].category:<15}{splits['train']:>6}{splits['test']:>6}"
            f"{triples:>9}  {', '.join(group[0].sgd_services)}"
        )
    rows.append(f"{len({s.domain for s in scenarios})} domains, {len(scenarios)} scenarios")
    return "\n".join(rows)


def describe_scenario(s: Scenario) -> str:
    """The scenario with its roles, patterns and needs, for reading."""
    facts = ScenarioFacts.of(s)
    lines = [
        f"{s.id}  ({s.domain_name}, {s.category}; split {s.split}; persona {s.persona}; SGD {', '.join(s.sgd_services)})",
        f"context: urgency {s.context.urgency}, budget {s.context.budget}, expertise {s.context.expertise}",
        f"request: {s.request}",
        f"requirement: {s.requirement.attribute} ({s.requirement.phrase})",
        f"favored: {s.favored.attribute} ({s.favored.better} is better)",
    ]
    x = s.identifiability
    if x is not None:
        lines.append(
            f"identifiability: {x.valid_triples} valid need triples; no option is best under "
            f"more than {x.best_posterior:.3f} of them"
        )
    for n in s.needs:
        lines += [
            f"{n.level} on {n.attribute}:",
            f"    statement:  {n.statement}",
            f"    ask answer: {n.ask_answer}",
            f"    hint:       {n.hint}",
        ]
    lines.append("options (role, pattern):")
    for i, c in enumerate(s.candidates):
        lines.append(f"  {i + 1:>2}. [{c.role.value:<10} {facts.patterns[i]}] {s.describe(c)}")
    return "\n".join(lines)
