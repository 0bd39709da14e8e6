-- The user center at scale, deterministic (setseed): {{users}} users (every 16th surname Tanaka), {{albums}} albums and
-- {{images}} images of account {{owner}}: created_at over the last year in id order, sizes 30 KB – 9 MB skewed small,
-- ~30 % private, ~75 % in an album (the first ones fuller), names as cameras, phones and people name files, "zanzibar"
-- in ~0.02 %. One transaction; the caller runs VACUUM ANALYZE after it.
insert into users (username, name, email, group_id, registered_ip, created_at)
select lower(f) || '.' || lower(l) || g, f || ' ' || l,
       lower(f) || '.' || g || '@' || (array['mail.example','corp.example','uni.example','home.example'])[1 + g % 4],
       (select id from groups where is_default limit 1), '127.0.0.1', now() - ({{users}} - g) * interval '50 minutes'
from generate_series(1, {{users}}) as g,
     lateral (select (array['Aiko','Akira','Anna','Ben','Carlos','Chen','David','Elena','Fatima','Hiro','Ines','James','Julia','Kenji',
                            'Lena','Liam','Maria','Mei','Noah','Olga','Omar','Priya','Ravi','Sara','Sofia','Tom','Yuki','Zoe'])[1 + (g * 7) % 28] as f,
                     (array['Tanaka','Suzuki','Sato','Smith','Garcia','Müller','Rossi','Kim','Nguyen','Silva','Novak','Cohen','Patel',
                            'Dubois','Jensen','Ivanova'])[1 + g % 16] as l) as n;
insert into albums (user_id, name, created_at)
select {{owner}}, (array['Holidays','Family','Screenshots','Work','Receipts','Cats','Garden','Concerts','Hiking','Wedding','Japan 2024',
                         'Memes','Diagrams','City walks','Food','Snow','Lake house','Birthdays','Archive','Misc'])[1 + (g - 1) % 20],
       now() - interval '365 days' + g * interval '10 days'
from generate_series(1, {{albums}}) as g;
update users set album_num = {{albums}} where id = {{owner}};
select setseed(0.18);
insert into images (key, user_id, album_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                    extension, width, height, md5, sha1, is_public, uploader_ip, created_at)
select k.key, {{owner}}, a.album_id, 1,
       to_char(t.at, 'YYYY/MM/DD') || '/' || k.key || '.' || n.ext, to_char(t.at, 'YYYY/MM/DD') || '/' || k.key || '.thumb.webp',
       k.key || '.' || n.ext, n.origin, s.size, case n.ext when 'png' then 'image/png' else 'image/jpeg' end, n.ext,
       d.w, d.h, md5(g::text), md5(g::text) || substr(md5((g + 1)::text), 1, 8), r.vis >= 0.3, '127.0.0.1', t.at
from (select array_agg(id order by id) as ids from albums where user_id = {{owner}}) as al,
     generate_series(1, {{images}}) as g,
     lateral (select random() as kind, random() as vis, random() as alb, random() as sz, random() as dim, (random() * 1000)::int as num,
                     (random() * 19)::int as w1, (random() * 19)::int as w2 where g > 0) as r,
     lateral (select now() - interval '365 days' + (g::float8 / {{images}}) * interval '365 days' + (r.num - 500) * interval '30 ms' as at) as t,
     lateral (select 'b' || lpad(to_hex(g), 6, '0') || substr(md5('k' || g), 1, 6) as key) as k,
     lateral (select case when r.alb < 0.25 then null
                          else al.ids[1 + floor(power((r.alb - 0.25) / 0.75, 1.6) * {{albums}})::int] end as album_id) as a,
     lateral (select (30000 + floor(power(r.sz, 2.5) * 9000000))::bigint as size) as s,
     lateral (select (array[4032,3024,1920,1170,2560,1080,800])[1 + floor(r.dim * 7)::int] as w,
                     (array[3024,4032,1080,2532,1440,1920,600])[1 + floor(r.dim * 7)::int] as h) as d,
     lateral (select array['beach','sunset','cat','dog','family','birthday','hiking','city','garden','concert','dinner','mountain',
                           'lake','snow','party','wedding','receipt','whiteboard','diagram','meme'] as words) as wl,
     lateral (select case
       when r.kind < 0.0002 then 'Zanzibar trip ' || r.num || '.jpg'
       when r.kind < 0.35 then 'IMG_' || to_char(t.at, 'YYYYMMDD_HH24MISS') || '.jpg'
       when r.kind < 0.55 then 'Screenshot ' || to_char(t.at, 'YYYY-MM-DD') || ' at ' || to_char(t.at, 'HH24.MI.SS') || '.png'
       when r.kind < 0.65 then 'PXL_' || to_char(t.at, 'YYYYMMDD_HH24MISSMS') || '.jpg'
       when r.kind < 0.82 then wl.words[1 + r.w1] || '-' || wl.words[1 + r.w2] || '-' || lpad(r.num::text, 3, '0') || '.jpg'
       when r.kind < 0.92 then 'photo_' || r.num || '.jpeg'
       else 'image (' || r.num || ').png' end as origin) as n0,
     lateral (select n0.origin, case when n0.origin like '%.png' then 'png' else 'jpg' end as ext) as n;
update users set image_num = s.n, used_bytes = s.bytes
from (select count(*)::int as n, coalesce(sum(size), 0)::bigint as bytes from images where user_id = {{owner}}) as s
where id = {{owner}};
