// An empty program linked against one cutune library (with --no-as-needed, so that every
// shared library on that library's link line becomes a DT_NEEDED entry): what readelf shows
// for it is what the library drags into any binary.
int main() { return 0; }
