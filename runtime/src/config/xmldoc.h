/* The control file's XML as a small tree of elements, read with libexpat (as the Python
 * side reads it): strict, with line numbers, and nothing ever expanded or fetched. */
#ifndef IOTUNE_XMLDOC_H
#define IOTUNE_XMLDOC_H

#include <stddef.h>

#define IOT_XML_NONE (-1)

/* One element. The whole document becomes a tree before any check: a document that turns
 * out not well-formed yields no settings, and a section's own problems can come before
 * those of its children. */
typedef struct {
    char **attrs;                  /* name, value, ..., NULL, in document order */
    const char *name;              /* the element's name (in the same allocation as attrs) */
    int line;                      /* of the start tag */
    int parent, first, last, next; /* node indices, IOT_XML_NONE when there is none */
    char *text; /* own character data (CDATA included, comments not), trimmed; NULL if blank */
    size_t len, cap;
} iot_xml_node;

typedef struct {
    iot_xml_node *nodes; /* nodes[0] is the root, the rest in document order */
    int n;
    int line;          /* of the problem, 0 when it has none */
    char problem[200]; /* why the text is refused */
} iot_xml_doc;

/* Reads a control file's text (any bytes). 0, or -1 with doc->problem (and doc->line) set.
 * Refuses text that does not start with a tag, a declared encoding other than UTF-8 or
 * US-ASCII, XML that is not well-formed, and any document type declaration. The caller
 * frees doc in both cases. */
int iot_xml_read(iot_xml_doc *doc, const char *text, size_t len);
void iot_xml_free(iot_xml_doc *doc);

/* The value of an attribute, or NULL. */
char *iot_xml_attr(const iot_xml_node *x, const char *name);

/* Trims white space (C's isspace, as the Python side's params.trim) in place; NULL when
 * nothing is left. */
char *iot_xml_trim(char *s);

#endif
