#include <cstdio>
int main() { std::fprintf(stderr, "graft: command line not built yet\n"); return 1; }
