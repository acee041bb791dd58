"""Book tooling: what the chapters, the site and the PDFs need beyond the attention library.

Figures (``plot`` in the house style, ``diagrams`` laid out by hand), interactive figures
(``widgets``, ``playground``, ``translator``), the bilingual label format (``bilingual``),
displayed source (``source``), timing and progress bars (``timing``, ``progress``), and the PDFs
(``pdf``, from ``pdf_document``, ``pdf_page`` and ``pdf_code``). This layer imports the
mechanisms and the worlds, never the reverse; its dependencies are the optional extra
``book`` (``pip install -e .[book]``).
"""
