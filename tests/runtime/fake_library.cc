// A tiny shared library the search tests copy into fake CUDA and Python-wheel folders.
extern "C" int cutune_fake_library_version() { return 42; }
