"""Server-rendered HTML for the fake app: plain strings, every user-provided value escaped.

Two layouts show the same records: ``a`` (wide, id column first, form below the table, labels
above inputs) and ``b`` (narrow, columns reordered, form above the table, labels beside inputs).
Either way each invoice row is named by its on-screen id, so a fingerprint taken through the
accessibility tree does not depend on the layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from string import Template

from ._errors import InvalidField
from ._invoice import DRAFT, Invoice
from ._knobs import Layout

_PAGE = Template("""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>$title — Fake invoicing</title>
<style>
body { font-family: sans-serif; margin: 0 auto; padding: 1rem; max-width: $width; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ccc; padding: .3rem .5rem; text-align: left; }
form.inline { display: inline; }
.field { margin: .4rem 0; }
.layout-a .field label { display: block; }
.layout-b .field { display: flex; align-items: center; gap: .5rem; }
[role=alert] { color: #a00; }
</style>
</head>
<body class="layout-$layout">
<header><nav aria-label="Main">$nav</nav></header>
<main>
<h1>$title</h1>
$body
</main>
</body>
</html>
""")

_WIDTH = {"a": "60rem", "b": "34rem"}


@dataclass(frozen=True)
class FormState:
    """What to show in a form: the values to refill and the field error, if any."""

    values: dict[str, str] = field(default_factory=dict)
    error: InvalidField | None = None


def esc(value: object) -> str:
    """HTML-escape anything for text or a quoted attribute."""
    return escape(str(value), quote=True)


def page(title: str, body: str, *, layout: Layout, current: str = "") -> str:
    """Wrap ``body`` (already HTML) in the site's page with the main navigation."""
    links = [("/", "Invoices"), ("/trash", "Trash")]
    current_attr = ' aria-current="page"'
    nav = " ".join(
        f'<a href="{href}"{current_attr if href == current else ""}>{text}</a>' for href, text in links
    )
    return _PAGE.substitute(title=esc(title), body=body, layout=layout, width=_WIDTH[layout], nav=nav)


def notice(message: str | None) -> str:
    """A polite status line after a successful action (empty when there is none)."""
    return f'<p role="status">{esc(message)}</p>' if message else ""


def invoices_page(
    invoices: Sequence[Invoice], *, layout: Layout, message: str | None, form: FormState
) -> str:
    """The invoice list with its "New invoice" form."""
    columns: list[tuple[str, Callable[[Invoice], str]]] = [
        ("Invoice", lambda inv: esc(inv.id)),
        ("Customer", lambda inv: esc(inv.customer)),
        ("Amount", lambda inv: esc(inv.amount_text)),
        ("Status", lambda inv: esc(inv.status)),
    ]
    if layout == "b":
        columns = [columns[3], columns[1], columns[2], columns[0]]
    table = _table("Invoices", columns, invoices, _row_actions(layout), layout=layout)
    create = _form("/invoices", "New invoice", "Create invoice", form, layout=layout, heading=True)
    parts = [notice(message), create, table] if layout == "b" else [notice(message), table, create]
    return page("Invoices", "\n".join(parts), layout=layout, current="/")


def edit_page(invoice: Invoice, *, layout: Layout, form: FormState) -> str:
    """The edit form for one invoice, with who changed it last."""
    if not form.values:
        form = FormState({"customer": invoice.customer, "amount": invoice.amount_text}, form.error)
    details = (
        "<h2>Details</h2>\n<dl>"
        f"<dt>Status</dt><dd>{esc(invoice.status)}</dd>"
        f"<dt>Last changed by</dt><dd>{esc(invoice.updated_by)}</dd>"
        f"<dt>Last changed at</dt><dd>{esc(_when(invoice.updated_at))}</dd></dl>"
    )
    body = _form(f"/invoices/{invoice.id}", "Edit invoice", "Save", form, layout=layout)
    body += '\n<p><a href="/">Back to invoices</a></p>\n' + details
    return page(f"Edit {invoice.id}", body, layout=layout)


def trash_page(
    items: Sequence[tuple[Invoice, datetime]],
    *,
    retention_days: int,
    layout: Layout,
    message: str | None,
) -> str:
    """Trash: deleted invoices with when each will be purged, and a Restore button."""
    kept = {inv.id: until for inv, until in items}
    columns: list[tuple[str, Callable[[Invoice], str]]] = [
        ("Invoice", lambda inv: esc(inv.id)),
        ("Customer", lambda inv: esc(inv.customer)),
        ("Amount", lambda inv: esc(inv.amount_text)),
        ("Status", lambda inv: esc(inv.status)),
        ("Deleted", lambda inv: esc(_when(inv.deleted_at))),
        ("Kept until", lambda inv: esc(_when(kept[inv.id]))),
    ]
    if layout == "b":
        columns = [columns[5], columns[3], columns[1], columns[2], columns[0], columns[4]]

    def actions(inv: Invoice) -> str:
        return _button(f"/trash/{inv.id}/restore", "Restore")

    intro = f"<p>Deleted invoices stay here for {retention_days} days, then they are gone for good.</p>"
    table = _table("Trash", columns, [inv for inv, _ in items], actions, layout=layout)
    return page("Trash", "\n".join([notice(message), intro, table]), layout=layout, current="/trash")


def error_page(title: str, message: str, *, layout: Layout) -> str:
    """A plain error page (404, 405, 409, …)."""
    body = f'<p role="alert">{esc(message)}</p>\n<p><a href="/">Back to invoices</a></p>'
    return page(title, body, layout=layout)


def _row_actions(layout: Layout) -> Callable[[Invoice], str]:
    def actions(inv: Invoice) -> str:
        parts = [f'<a href="/invoices/{esc(inv.id)}/edit">Edit</a>']
        if inv.status == DRAFT:
            parts.append(_button(f"/invoices/{inv.id}/send", "Send invoice"))
        parts.append(_button(f"/invoices/{inv.id}/delete", "Delete"))
        return " ".join(reversed(parts) if layout == "b" else parts)

    return actions


def _table(
    label: str,
    columns: Sequence[tuple[str, Callable[[Invoice], str]]],
    invoices: Sequence[Invoice],
    actions: Callable[[Invoice], str],
    *,
    layout: Layout,
) -> str:
    head = "".join(f'<th scope="col">{esc(name)}</th>' for name, _ in columns)
    rows = []
    for inv in invoices:
        cells = "".join(
            # The id cell is the row header in layout a; in b it is an ordinary cell.
            f'<th scope="row">{cell(inv)}</th>'
            if name == "Invoice" and layout == "a"
            else f"<td>{cell(inv)}</td>"
            for name, cell in columns
        )
        rows.append(
            f'<tr aria-label="{esc(inv.id)}" data-invoice-id="{esc(inv.id)}">'
            f"{cells}<td>{actions(inv)}</td></tr>"
        )
    if not rows:
        rows.append(f'<tr><td colspan="{len(columns) + 1}">Nothing here.</td></tr>')
    body = "\n".join(rows)
    return (
        f'<table aria-label="{esc(label)}">\n<thead><tr>{head}<th scope="col">Actions</th></tr>'
        f"</thead>\n<tbody>\n{body}\n</tbody>\n</table>"
    )


def _form(
    action: str, label: str, submit: str, form: FormState, *, layout: Layout, heading: bool = False
) -> str:
    error = form.error
    alert = ""
    if error is not None:
        alert = (
            f'<p role="alert" id="form-error" data-error-field="{esc(error.field)}">'
            f"{esc(error.field.capitalize())} {esc(error.reason)}.</p>"
        )
    fields = []
    for name, text in (("customer", "Customer"), ("amount", "Amount")):
        invalid = ' aria-invalid="true" aria-describedby="form-error"'
        extra = invalid if error is not None and error.field == name else ""
        kind = ' inputmode="decimal"' if name == "amount" else ""
        value = esc(form.values.get(name, ""))
        label_html = f'<label for="{name}">{text}</label>'
        input_html = f'<input id="{name}" name="{name}" value="{value}"{kind}{extra} required>'
        # Layout b puts the input first in the markup and shows the label to its right.
        pair = input_html + label_html if layout == "b" else label_html + input_html
        fields.append(f'<div class="field">{pair}</div>')
    title = f"<h2>{esc(label)}</h2>\n" if heading else ""
    return (
        f'<section aria-label="{esc(label)}">\n{title}{alert}\n'
        f'<form method="post" action="{esc(action)}">\n{"".join(fields)}\n'
        f'<button type="submit">{esc(submit)}</button>\n</form>\n</section>'
    )


def _button(action: str, text: str) -> str:
    return (
        f'<form class="inline" method="post" action="{esc(action)}">'
        f'<button type="submit">{esc(text)}</button></form>'
    )


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")
