// The arena as a picture: Arena::write_svg (patrol routes, guards coloured by activity, intruders,
// raised alarms, a title and a legend).
#include "arena_internal.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace ebt::scenarios {

using namespace arena_internal;

void Arena::write_svg(const std::string& path) const {
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (!out) throw std::runtime_error("cannot write '" + path + "'");
    const double scale = std::clamp(1200.0 / std::max(width_, height_), 0.5, 12.0);
    const double band = 56;  // title and legend above the arena
    const double w = width_ * scale, hgt = height_ * scale;
    const auto X = [&](double x) { return x * scale; };
    const auto Y = [&](double y) { return band + y * scale; };
    const ArenaCounts c = counts();
    std::fprintf(out,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                 "font-family=\"sans-serif\">\n",
                 w, hgt + band, w, hgt + band);
    std::fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    std::fprintf(out, "<rect x=\"0\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3efe4\"/>\n", band, w, hgt);
    std::fprintf(out,
                 "<text x=\"8\" y=\"20\" font-size=\"15\" font-weight=\"bold\">ebt arena: %d guards, %d squads, "
                 "t = %.1f s (%s mode%s)</text>\n",
                 config_.agents, squads(), seconds(now_), to_string(config_.mode), config_.lod ? ", LOD" : "");
    struct Legend {
        const char* colour;
        const char* text;
        int n;
    };
    const Legend legend[] = {{"#3f6fb0", "patrol", c.patrol},
                             {"#e3a21a", "respond", c.respond},
                             {"#d3302f", "attack", c.attack},
                             {"#2f9e55", "flee", c.flee},
                             {"#8e44ad", "stunned", c.stunned},
                             {"#7f8c8d", "knocked back", c.knocked_back},
                             {"#000000", "intruders", c.intruders_active}};
    double lx = 8;
    for (const Legend& l : legend) {
        std::fprintf(out, "<circle cx=\"%.1f\" cy=\"40\" r=\"5\" fill=\"%s\"/>", lx + 5, l.colour);
        std::fprintf(out, "<text x=\"%.1f\" y=\"45\" font-size=\"13\">%s %d</text>\n", lx + 14, l.text, l.n);
        lx += 118;
    }
    std::fprintf(out, "<text x=\"%.1f\" y=\"45\" font-size=\"13\" fill=\"#c0392b\">alarmed squads %d</text>\n", lx,
                 c.squads_alarmed);

    // Patrol routes.
    const double route_w = std::max(0.6, 0.25 * scale);
    std::fprintf(out, "<g fill=\"none\" stroke=\"#c9c0aa\" stroke-width=\"%.2f\">\n", route_w);
    for (const Squad& s : squads_) {
        std::fprintf(out, "<polygon points=\"");
        for (const Vec2& p : s.route) std::fprintf(out, "%.1f,%.1f ", X(p.x), Y(p.y));
        std::fprintf(out, "\"/>\n");
    }
    std::fprintf(out, "</g>\n");
    // Squad alarms.
    std::fprintf(out, "<g fill=\"#e74c3c\" fill-opacity=\"0.18\" stroke=\"#e74c3c\" stroke-opacity=\"0.6\" stroke-width=\"%.2f\">\n",
                 route_w);
    for (const Squad& s : squads_)
        if (s.blackboard->get<bool>("alarm"))
            std::fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>\n", X(s.alarm_pos.x), Y(s.alarm_pos.y), kSight * scale);
    std::fprintf(out, "</g>\n");
    // Guards by activity (one group per colour keeps the file small).
    const double gr = std::max(0.9, 0.6 * scale);
    for (int a = 0; a <= static_cast<int>(Activity::Knockback); ++a) {  // legend[a] is activity a's
        std::fprintf(out, "<g fill=\"%s\">\n", legend[a].colour);
        for (const Guard& g : guards_)
            if (static_cast<int>(g.activity) == a)
                std::fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.2f\"/>\n", X(g.pos.x), Y(g.pos.y), gr);
        std::fprintf(out, "</g>\n");
    }
    // Intruders: black diamonds.
    const double ir = std::max(2.2, 1.1 * scale);
    std::fprintf(out, "<g fill=\"#000000\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n");
    for (const Intruder& in : intruders_)
        if (in.active && in.health > 0)
            std::fprintf(out, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", X(in.pos.x), Y(in.pos.y) - ir,
                         X(in.pos.x) + ir, Y(in.pos.y), X(in.pos.x), Y(in.pos.y) + ir, X(in.pos.x) - ir, Y(in.pos.y));
    std::fprintf(out, "</g>\n</svg>\n");
    const bool ok = std::ferror(out) == 0;
    if (std::fclose(out) != 0 || !ok) throw std::runtime_error("error writing '" + path + "'");
}

}  // namespace ebt::scenarios
