// Built against an *installed* ebt by the package_consumer test: only the
// public headers and the exported ebt::ebt target are available here.
#include <ebt/ebt.hpp>

int main() { return ebt::version_string() != nullptr ? 0 : 1; }
