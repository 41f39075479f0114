/* A well-formedness scan of a control file's text, run before MiniXML parses it. */
#ifndef IOTUNE_XMLSCAN_H
#define IOTUNE_XMLSCAN_H

/* MiniXML is lenient where expat (the Python side) is strict: it accepts an unclosed root,
 * text after the root and '<' in attribute values, and keeps no line numbers. This scan,
 * run first, refuses what expat refuses there and records the line of every start tag. It
 * also normalises white space in attribute values as XML says (a tab or line break is a
 * space), which MiniXML does not. */
typedef struct {
    int *lines; /* of the start tags, in document order */
    int n, cap;
    int line;          /* where the scan is */
    char problem[160]; /* why the text is refused, "" when it is not */
    int dtd;           /* the problem is a document type declaration or entity */
} iot_xml_scan;

/* Scans text (NUL-terminated, line breaks already normalised to LF; attribute values are
 * normalised in place). 0 when it is well-formed; else -1 with x->problem, x->line and x->dtd
 * set. The caller frees x->lines in both cases. */
int iot_xml_scan_text(iot_xml_scan *x, char *text);

#endif
