"""One author-year citation style, in the text and in the bibliography, with links back.

The text cites in author-year form ([Bahdanau et al., 2014], ``bibtex_reference_style:
author_year``), but sphinxcontrib-bibtex labels the bibliography with pybtex's "alpha" style
([BCB14]), so a reader cannot match the two. This extension registers a pybtex style,
``authoryear`` (``bibtex_default_style``), whose labels are the in-text form: one author
"Last, 2014", two "Last and Last, 1964", more "Last et al., 2014" (with a, b for equal
labels), sorted by author, year and title. Each bibliography entry then links back to every
page that cites it ("cited in" / "引用于", following the language switch), by the page's
English title.
"""
from __future__ import annotations

from collections import defaultdict

from docutils import nodes
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

from attention_core.book.bilingual import pick, spans


def _last(person) -> str:
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


def author_year(entry) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last(p) for p in people]
    if not names:
        who = entry.fields.get("title", entry.key)
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [author_year(e) for e in sorted_entries]
        count = defaultdict(int)
        for label in labels:
            count[label] += 1
        seen = defaultdict(int)
        for label in labels:
            if count[label] > 1:  # Vaswani et al., 2017a and 2017b
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            else:
                yield label


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "authoryear"
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)


# --- links back from the bibliography to the pages that cite ---------------------------

def _env_cites(env):
    if not hasattr(env, "book_cites"):
        env.book_cites = {}  # docname -> [(key, node id)]
    return env.book_cites


def collect_cites(app, doctree):
    from sphinx.addnodes import pending_xref

    docname = app.env.docname
    found = []
    for ref in doctree.findall(pending_xref):
        if ref.get("refdomain") == "cite" and ref.get("ids"):
            for key in ref["reftarget"].split(","):
                found.append((key.strip(), ref["ids"][0]))
    _env_cites(app.env)[docname] = found


def purge_cites(app, env, docname):
    _env_cites(env).pop(docname, None)


def merge_cites(app, env, docnames, other):
    _env_cites(env).update({d: v for d, v in _env_cites(other).items() if d in docnames})


def add_backlinks(app, doctree, docname):
    citations = list(doctree.findall(nodes.citation))
    if not citations:
        return
    domain = app.env.get_domain("cite")
    key_of = {c.citation_id: c.key for c in domain.citations
              if c.bibliography_key.docname == docname}
    citing = defaultdict(list)  # key -> [(docname, id)], one link per citing page
    for other in sorted(_env_cites(app.env)):
        for key, node_id in _env_cites(app.env)[other]:
            if all(d != other for d, _ in citing[key]):
                citing[key].append((other, node_id))
    for citation in citations:
        key = key_of.get(citation["ids"][0]) if citation["ids"] else None
        if not key or not citing.get(key):
            continue
        para = nodes.paragraph(classes=["citation-backlinks"])
        para += nodes.Text("↩ ")
        para += nodes.raw("", spans("cited in", "引用于"), format="html")
        para += nodes.Text(": ")
        for n, (other, node_id) in enumerate(citing[key]):
            if n:
                para += nodes.Text(", ")
            title = app.env.titles[other].astext() if other in app.env.titles else other
            uri = app.builder.get_relative_uri(docname, other) + "#" + node_id
            para += nodes.reference("", pick(title, "en"), refuri=uri, internal=True,
                                    classes=["citation-backlink"])
        citation += para


def setup(app):
    app.connect("doctree-read", collect_cites)
    app.connect("env-purge-doc", purge_cites)
    app.connect("env-merge-info", merge_cites)
    app.connect("doctree-resolved", add_backlinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
