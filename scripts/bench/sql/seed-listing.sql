-- Image rows of one listing account ({{count}} of them, no files), and the account's counters.
insert into images (key, user_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                    extension, width, height, md5, sha1, is_public, uploader_ip, created_at)
select '{{tag}}-' || g, {{userId}}, 1, '2024/01/01/{{tag}}-' || g || '.png', null, '{{tag}}-' || g || '.png',
       'shot.png', 2048, 'image/png', 'png', 300, 200, md5(g::text), md5(g::text) || '01234567', true, '127.0.0.1',
       timestamptz '2024-01-01 00:00:00+00' - g * interval '1 second'
from generate_series(1, {{count}}) as g;
update users set image_num = image_num + {{count}}, used_bytes = used_bytes + {{count}} * 2048 where id = {{userId}};
