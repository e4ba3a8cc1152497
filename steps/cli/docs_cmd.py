"""`docs`: regenerate each root's generated docs, and for the built-in root those rendered from
the rules (runners.check.generated); an installed copy is refused (E-DOCS-INSTALLED) first."""

from __future__ import annotations

from steps.cli.common import add_catalog_arguments, add_json_argument, print_findings

HELP = (
    "regenerate ARTIFACTS.md, PATTERNS.md, FAILURES.md, PREFLIGHT.md, docs/codes.md and the "
    "step.toml schema"
)


def add_arguments(parser) -> None:
    add_catalog_arguments(parser)
    parser.add_argument(
        "--no-builtin",
        action="store_true",
        help="only the --catalog roots (their docs live in each root)",
    )
    add_json_argument(parser, "the files written and the findings")


def run(args) -> int:
    from catalog.docs import require_writable_home, write_docs
    from catalog.errors import StepsError
    from steps.cli.check_cmd import usable_roots

    roots = usable_roots(args)
    for root in roots:
        require_writable_home(root)
    written, current, findings = [], [], []
    for root in roots:
        try:
            changed, found = write_docs(root)
        except OSError as exc:
            raise StepsError(
                "E-DOCS-WRITE",
                f"cannot write the generated docs: {exc.strerror or exc}",
                path=exc.filename or str(root),
                fix="make the catalog root writable (or remove what is in the way)",
                exit_code=2,
            ) from None
        findings += found
        changed += _preflight_doc(root)
        written += changed
        if not changed:
            current.append(root)
    code = 1 if any(f.is_error for f in findings) else 0
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(findings, written=written, up_to_date=current))
        return code
    print_findings(findings)
    for path in written:
        print(f"wrote {path}")
    for root in current:
        print(f"up to date: docs of {root}")
    return code


def _preflight_doc(root) -> list:
    """The built-in root's files rendered from the rules: PREFLIGHT.md and the kinds' codes."""
    from catalog.discovery import BUILTIN_ROOT
    from catalog.docs import write_changed
    from runners.check.generated import generated

    return write_changed(generated(BUILTIN_ROOT.parent)) if root == BUILTIN_ROOT else []
